"""The live dashboard's HTTP server: the page, the run's live data (`/api/live`), its controls, the
downloads and Prometheus' `/metrics`.

The run never waits on the server. The thread that drives the run (the hub's, or bench's and mqtt's
progress loop) reads the engine's live stream once a second and hands it to a `LiveStore`; the server's
threads only read the store, under its lock, and queue control commands that the driving thread takes
when it is ready (`Dashboard.commands`). So a browser costs the run one engine read a second, whatever
it asks, and a slow or hostile client holds no lock the run needs.

It binds 127.0.0.1 unless told otherwise. Beyond loopback, the controls (start, stop, users, reset) need
`--web-auth USER:PASS` (HTTP basic authentication over the whole dashboard); without it they are
disabled, with a warning. Whom it answers and whose controls it takes (the Host, the origin, the JSON
type, the run's token) is squall.web.guard's policy; what a control may ask, squall.web.controls'.

Bad requests get a one-line answer with their status, never a traceback: a malformed request line or
header (http.server's 400/414/431/505/501), a foreign Host (403), a body that is too long (413), without a
length (411) or not JSON (400); a body is read whatever the method, or the connection closes after the
answer (lingering, so that the answer is not lost to a reset); a client that stops sending is dropped
after TIMEOUT_S, and a connection that breaks mid-answer is closed quietly."""

from __future__ import annotations

import base64
import hmac
import json
import queue
import re
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from squall.log import get_logs
from squall.report import locust_csv
from squall.runtime.gevent_hub import NativeThread
from squall.web import page
from squall.web.controls import BODY_LIMIT, StartCheck, read_body, validate
from squall.web.guard import HEADERS, Guard, is_loopback
from squall.web.history import Seconds
from squall.web.metrics import prometheus

TIMEOUT_S = 30.0  # a client silent this long mid-request (or idle on a kept-alive connection) is dropped
LINGER_S, LINGER_BYTES = 2.0, 1 << 20  # what is read and dropped of a client's unread input when closing

# A command's answer waits for the run to obey it this long at most (a task holding the run's thread);
# after it, the answer says ok: the command is queued and is obeyed when the run's loop next passes.
OBEY_WAIT_S = 2.0

RUNNING = ("spawning", "running")  # the states in which a run's loop takes the page's commands
STATES = ("ready", "spawning", "running", "stopping", "stopped")


class LiveStore:
    """What the dashboard shows, as the driving thread last published it."""

    def __init__(self, page_meta: dict[str, Any], kind: str) -> None:
        self.lock = threading.Lock()
        self.meta = page_meta
        self.kind = kind
        self.state = "ready"
        self.started: float | None = None
        self.users = 0
        self.target_users: int | None = None
        self.seconds = Seconds()  # the charts' history, kept as text (squall.web.history)
        self.totals: dict[str, Any] = {"aggregate": None, "endpoints": [], "errors": [], "exceptions": []}
        self.schedule: dict[str, Any] | None = None
        self.mqtt: dict[str, Any] | None = None
        self.result: dict[str, Any] | None = None
        self.last_poll: float | None = None  # when a page last asked for /api/live
        self.monitor: dict[str, Any] | None = None  # the target's resources so far (squall.monitor)
        self.generator: dict[str, Any] | None = None  # the generator watching itself
        # `squall -f`: the tests started in this process (Locust's web UI starts another after a Stop),
        # whether the page may start one now, the host and spawn rate of the one running, the users'
        # task ratio (Locust's "Current ratio").
        self.test = 0
        self.startable = False
        self.host: str | None = None
        self.spawn_rate: float | None = None
        self.tasks: dict[str, Any] | None = None

    def begin_test(self, **fields: Any) -> None:
        """Another test starts: the page's data starts over (the seconds, the totals, the result)."""
        with self.lock:
            self.test += 1
            self.startable = False
            self.seconds = Seconds()
            self.totals = {"aggregate": None, "endpoints": [], "errors": [], "exceptions": []}
            self.schedule = self.mqtt = self.result = self.monitor = self.generator = self.started = None
            self.users = 0
            for k, v in fields.items():
                setattr(self, k, v)

    def take_start(self) -> bool:
        """A start the page asked for is accepted once: until the run begins the test (or refuses),
        another is refused, so that a double click starts one test."""
        with self.lock:
            accepted, self.startable = self.startable, False
            return accepted

    def publish(self, live: dict[str, Any], **fields: Any) -> None:
        """The engine's `live()` answer (new seconds and the totals) and any of the other fields."""
        with self.lock:
            self.seconds.extend(live["timeseries"])
            exceptions = self.totals.get("exceptions", [])
            self.totals = dict(live["totals"], exceptions=fields.pop("exceptions", exceptions))
            for k, v in fields.items():
                setattr(self, k, v)

    def set(self, **fields: Any) -> None:
        with self.lock:
            for k, v in fields.items():
                setattr(self, k, v)

    def finish(self, result: dict[str, Any]) -> None:
        with self.lock:
            self.result = result
            self.state = "stopped"

    def view_json(self, cursor: int) -> str:
        """The answer to `GET /api/live?cursor=N` (web/README.md) as JSON text: the seconds from `cursor`
        are spliced in as the store keeps them (text), read after the lock is let go."""
        with self.lock:
            self.last_poll = time.monotonic()
            cursor = max(0, min(cursor, len(self.seconds)))
            head = {
                "state": self.state,
                "kind": self.kind,
                "elapsed_s": 0.0 if self.started is None else time.monotonic() - self.started,
                "users": self.users,
                "target_users": self.target_users,
                "cursor": len(self.seconds),
                "totals": self.totals,
                "schedule": self.schedule,
                "mqtt": self.mqtt,
                "monitor": self.monitor,
                "generator": self.generator,
                "finished": self.result is not None,
                "test": self.test,
                "startable": self.startable,
                "host": self.host,
                "spawn_rate": self.spawn_rate,
            }
            reader = self.seconds.reader(cursor)
            text = page.to_json(head)
        return page.with_member(text, "timeseries", reader.json_array())

    def gauges(self) -> dict[str, Any]:
        """What /metrics reads beside the totals: the users now, whether the run has ended, MQTT's
        counters (read under the lock, not from `view`, which encodes the whole answer to decode it)."""
        with self.lock:
            return {"users": self.users, "finished": self.result is not None, "mqtt": self.mqtt}

    def view(self, cursor: int) -> dict[str, Any]:
        """`view_json`'s answer as objects (in-process readers: tests)."""
        doc: dict[str, Any] = json.loads(self.view_json(cursor))
        return doc

    def _so_far(self) -> dict[str, Any]:
        """The run so far in the result's shape without its seconds (the caller holds the lock)."""
        agg = self.totals["aggregate"] or page.no_requests()  # a test's start, before its first second
        first = self.seconds.first_unix
        return {
            "squall_version": self.meta["squall_version"],
            "kind": self.kind,
            "url": self.meta["target"],
            "method": "",
            "start_unix": first if first is not None else time.time(),
            "duration_s": float(len(self.seconds)),
            "stop_reason": "running",
            "load": self.meta.get("load") or {},
            "aggregate": agg,
            "endpoints": self.totals["endpoints"],
            "errors": self.totals["errors"],
            "exceptions": self.totals.get("exceptions", []),
            "schedule": self.schedule,
            "abandoned": 0,
        }

    def current_totals(self) -> dict[str, Any]:
        """The final result, or the run so far in the result's shape with an empty `timeseries`: what the
        CSV downloads and /metrics compute with, without the seconds."""
        with self.lock:
            if self.result is not None:
                return self.result
            return dict(self._so_far(), timeseries=[])

    def current_json(self) -> tuple[str, dict[str, Any]]:
        """The final result, or the run so far, as JSON text (its seconds spliced in as kept), and the
        same without the seconds (`current_totals`): the result download and the HTML report."""
        with self.lock:
            if self.result is not None:
                return page.to_json(self.result), self.result
            so_far = self._so_far()
            reader = self.seconds.reader(0)
            text = page.to_json(so_far)
        return page.with_member(text, "timeseries", reader.json_array()), dict(so_far, timeseries=[])

    def current_result(self) -> dict[str, Any]:
        """The final result, or the run so far with its seconds, as objects (tests, small runs)."""
        doc: dict[str, Any] = json.loads(self.current_json()[0])
        return doc


class Dashboard:
    """The server, on its own threads; `commands` holds the control actions for the driving thread:
    ("start", {users, spawn_rate, host}), ("users", {users, spawn_rate}), ("stop", {}), ("reset", {})."""

    def __init__(self, store: LiveStore, host: str, port: int, auth: str | None = None) -> None:
        self.store = store
        self.commands: queue.Queue[tuple[str, dict[str, Any]]] = queue.Queue()
        # A command is answered once the run obeyed it (`obeyed`), so that what the page (or a script)
        # reads after the answer already shows it: commands are numbered as they are put, and the
        # driving thread counts those it took and obeyed. Each count is written by one thread only.
        self._put_lock = threading.Lock()  # the handlers' (threads, or greenlets of the server's thread)
        self._put = 0
        self._taken = 0
        self._obeyed = 0
        self.auth = auth
        self.guard = Guard(host)
        self.check_start: StartCheck | None = None  # squall -f: the command line's checks of a Start
        # squall -f: the locustfile's Flask app (web_ui.app, squall.web.flask_app), which answers the
        # paths the dashboard does not serve, after the dashboard's checks; with --web-login, its logins.
        self.web_app: Any = None
        loopback = is_loopback(host)
        if not loopback and not auth:
            sys.stderr.write(
                f"squall: warning: the dashboard listens on {host}, beyond loopback, without --web-auth: "
                "anyone who reaches it sees the run; its controls are disabled\n"
            )
            store.meta["controls"] = dict.fromkeys(store.meta["controls"], False)
        handler = type("Handler", (_Handler,), {"dashboard": self})
        self.server = _Server((host, port), handler)
        self.thread = NativeThread(self.server.serve_forever, "squall-dashboard")  # real, whatever gevent patched

    def live_page(self, extension: dict[str, Any] | None = None) -> str:
        """The dashboard's page (live mode), with the tabs and CSV files a locustfile's route adds to it
        when it renders Locust's `index.html` (`extension`: squall.web.flask_app `extension_of`)."""
        data: dict[str, Any] = {"mode": "live", "meta": self.store.meta, "token": self.guard.token}
        if extension:
            data["extension"] = extension
        return page.render(data, inline=False)

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        host = host.decode() if isinstance(host, bytes) else str(host)
        shown = f"[{host}]" if ":" in host else host
        return f"http://{shown}:{port}/"

    def start(self) -> None:
        self.thread.start()
        sys.stderr.write(f"squall: dashboard at {self.url}\n")

    def stop(self) -> None:
        # socketserver's shutdown() waits on a threading.Event, gevent's once a locustfile's run patched
        # the standard library, which a real thread cannot wake (squall.runtime.gevent_hub): the server is asked
        # to stop as shutdown() asks it, and its real thread is joined (it polls every 0.5 s).
        self.server._BaseServer__shutdown_request = True  # type: ignore[attr-defined]
        self.thread.join(timeout=5)
        self.server.server_close()

    def put_command(self, action: str, command: dict[str, Any]) -> int:
        """Queues a command for the driving thread; returns its number, for `wait_obeyed`."""
        with self._put_lock:
            self._put += 1
            self.commands.put((action, command))
            return self._put

    def take_commands(self) -> list[tuple[str, dict[str, Any]]]:
        """The commands since the last take, in order (the driving thread; `obeyed` when done)."""
        out = []
        while True:
            try:
                out.append(self.commands.get_nowait())
            except queue.Empty:
                self._taken += len(out)
                return out

    def obeyed(self) -> None:
        """The driving thread did what every command it took asked."""
        self._obeyed = self._taken

    def wait_obeyed(self, number: int, timeout: float = OBEY_WAIT_S) -> bool:
        """Whether command `number` was obeyed within `timeout` seconds, while a test runs. Polled: the
        driving thread may be a gevent hub's, which no lock of this thread's can wake
        (squall.runtime.gevent_hub); a loop passes over the commands every 0.1 s, so 10 ms polls add at
        most a tenth to the wait."""
        deadline = time.monotonic() + timeout
        while self._obeyed < number:
            if time.monotonic() >= deadline or self.store.state not in RUNNING:
                return False  # (no run left to obey it: the test ended, or has not started)
            time.sleep(0.01)
        return True


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def shutdown_request(self, request: Any) -> None:
        """A lingering close, as nginx's: the answer sent, what the client still sends (a body never read,
        the rest of a refused request) is read and dropped for at most LINGER_S and LINGER_BYTES before
        closing; closing with it unread would reset the connection and could lose the answer."""
        try:
            request.shutdown(socket.SHUT_WR)
            request.settimeout(LINGER_S)
            deadline, drained = time.monotonic() + LINGER_S, 0
            while drained < LINGER_BYTES and time.monotonic() < deadline:
                chunk = request.recv(65536)
                if not chunk:
                    break
                drained += len(chunk)
        except OSError:
            pass
        self.close_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A connection that broke (the client left) is closed quietly; anything else is a bug of the
        handler, said in one line (socketserver would print a traceback on the run's console)."""
        error = sys.exc_info()[1]
        if isinstance(error, OSError):
            return
        sys.stderr.write(f"squall: the dashboard could not answer a request: {type(error).__name__}: {error}\n")


class _Handler(BaseHTTPRequestHandler):
    dashboard: Dashboard
    server_version = "squall"
    protocol_version = "HTTP/1.1"
    default_request_version = "HTTP/1.0"  # a malformed request line is answered with a status line
    # http.server's own refusals (a malformed request line or header, an unknown method) in one line
    error_message_format = "squall: %(code)d %(message)s\n"
    error_content_type = "text/plain; charset=utf-8"
    timeout = TIMEOUT_S
    body_read = False  # the request's body has been read: the connection can serve another request

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the console belongs to the run

    def handle_one_request(self) -> None:
        self.body_read = False
        super().handle_one_request()

    def parse_request(self) -> bool:
        """http.server's, refusing HTTP/0.x, which it would answer without a status line."""
        if not super().parse_request():
            return False
        if int(self.request_version[5:].split(".")[0]) < 1:
            self.send_error(505, "HTTP/1.0 or 1.1 only")
            return False
        return True

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        if self.request_version == "HTTP/0.9":  # http.server would leave out the status line and headers
            self.request_version = "HTTP/1.0"
        super().send_error(code, message, explain)

    def _authorized(self) -> bool:
        auth = self.dashboard.auth
        if not auth:
            return True
        given = self.headers.get("Authorization", "")
        expected = "Basic " + base64.b64encode(auth.encode()).decode()
        if hmac.compare_digest(given.encode("utf-8", "replace"), expected.encode()):
            return True
        self._send(401, b"", "text/plain", {"WWW-Authenticate": 'Basic realm="squall"'})
        return False

    def _admitted(self) -> bool:
        """The Host (guard's policy), then the credentials: a refused Host is never asked for them."""
        why = self.dashboard.guard.host_refusal(self.headers, self.path)
        if why is not None:
            self._send(403, f"squall: {why}\n".encode(), "text/plain; charset=utf-8")
            return False
        return self._authorized()

    def _send(self, status: int, body: bytes, content_type: str, extra: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        for k, v in {**HEADERS, **(extra or {})}.items():
            self.send_header(k, v)
        if self._body_unread():  # it would be read as the next request
            self.close_connection = True
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _body_unread(self) -> bool:
        headers = getattr(self, "headers", None)
        if headers is None or self.body_read:
            return False
        return headers.get("Transfer-Encoding") is not None or (headers.get("Content-Length") or "0").strip() != "0"

    def _json(self, data: Any, status: int = 200) -> None:
        self._send(status, page.to_json(data).encode(), "application/json")

    def _answer(self, serve: Any) -> None:
        """`serve()`, with a bug in it answered 500 in one line instead of a traceback on the console."""
        try:
            serve()
        except (OSError, TimeoutError):
            raise  # the connection broke or stalled: the server closes it quietly
        except Exception as e:  # one line for any bug: the run goes on
            sys.stderr.write(f"squall: the dashboard could not answer {self.command} {self.path[:100]!r}: {e!r}\n")
            self.close_connection = True
            self._json({"ok": False, "error": "the dashboard could not answer this request"}, 500)

    def do_HEAD(self) -> None:
        self.do_GET()

    def do_GET(self) -> None:
        self._answer(self._get)

    def do_POST(self) -> None:
        self._answer(self._post)

    def _get(self) -> None:
        if self._body_unread() and self._read_body() is None:  # a GET with a body: read (or refused)
            return
        if not self._admitted():
            return
        why = self.dashboard.guard.read_refusal(self.headers)
        if why is not None:
            self._send(403, f"squall: {why}\n".encode(), "text/plain; charset=utf-8")
            return
        url = urlsplit(self.path)
        web = self.dashboard.web_app
        if web is not None and web.takes(self, url.path):  # a path of the locustfile's app, or a login first
            return
        store = self.dashboard.store
        if url.path in ("/", "/index.html"):
            self._send(200, self.dashboard.live_page().encode(), "text/html; charset=utf-8")
        elif url.path in ("/assets/app.js", "/assets/app.css"):
            name = url.path.rsplit("/", 1)[1]
            kind = "text/javascript" if name.endswith(".js") else "text/css"
            self._send(200, page.asset(name), kind + "; charset=utf-8")
        elif url.path == "/api/live":
            try:
                cursor = int(parse_qs(url.query).get("cursor", ["0"])[0])
            except ValueError:
                cursor = 0
            self._send(200, store.view_json(cursor).encode(), "application/json")
        elif url.path == "/api/result":
            if store.result is None:
                self._json({"ok": False, "error": "the run has not ended"}, 404)
            else:
                self._json(store.result)
        elif url.path == "/download/result.json":
            self._send(200, store.current_json()[0].encode(), "application/json", _attachment("json"))
        elif url.path == "/download/stats.csv":
            text = locust_csv.stats_csv(store.current_totals())
            self._send(200, text.encode(), "text/csv; charset=utf-8", _attachment("csv"))
        elif url.path in ("/download/failures.csv", "/download/exceptions.csv"):
            make = locust_csv.failures_csv if url.path == "/download/failures.csv" else locust_csv.exceptions_csv
            text = make(store.current_totals())
            self._send(200, text.encode(), "text/csv; charset=utf-8", _attachment(url.path[10:-4] + ".csv"))
        elif url.path == "/api/logs":
            self._json({"lines": get_logs()})
        elif url.path == "/api/tasks":
            with store.lock:
                tasks = store.tasks
            self._json(tasks or {"per_class": {}, "total": {}})
        elif url.path == "/download/report.html":
            html = page.report_of_json(*store.current_json(), store.meta)
            self._send(200, html.encode(), "text/html; charset=utf-8", _attachment("html"))
        elif url.path == "/metrics":
            body = prometheus(store.current_totals(), store.gauges(), store.kind)
            self._send(200, body.encode(), "text/plain; version=0.0.4; charset=utf-8")
        else:
            self._send(404, b"not found\n", "text/plain")

    def _read_body(self) -> bytes | None:
        """The POST's body (Content-Length bytes), or None once a refusal is sent (the connection then
        closes: what is left of the body would be read as the next request)."""
        if self.headers.get("Transfer-Encoding") is not None:
            self._json({"ok": False, "error": "the controls take a body with a Content-Length"}, 411)
            return None
        lengths = self.headers.get_all("Content-Length") or ["0"]
        if len(lengths) != 1 or not re.fullmatch(r"[0-9]{1,12}", lengths[0].strip()):
            self._json({"ok": False, "error": "Content-Length is not a length"}, 400)
            return None
        length = int(lengths[0])
        if length > BODY_LIMIT:
            self._json({"ok": False, "error": f"the body is over {BODY_LIMIT} bytes"}, 413)
            return None
        raw = self.rfile.read(length)
        if len(raw) < length:
            self._json({"ok": False, "error": "the body ended before its Content-Length"}, 400)
            return None
        self.body_read = True
        return raw

    def _post(self) -> None:
        raw = self._read_body()  # first: a refusal then leaves nothing unread (the connection stays usable)
        if raw is None or not self._admitted():
            return
        dashboard = self.dashboard
        path = urlsplit(self.path).path
        if dashboard.web_app is not None and dashboard.web_app.takes(self, path, raw):  # as in _get
            return
        action = path.removeprefix("/api/")
        controls = dashboard.store.meta["controls"]
        if path == action or action not in ("start", "users", "stop", "reset"):
            self._json({"ok": False, "error": f"no such action: {path[:100]}"}, 404)
            return
        if not controls.get(action):
            self._json({"ok": False, "error": f"{action} is not available for this run"}, 403)
            return
        refused = dashboard.guard.control_refusal(self.headers)
        if refused is not None:
            self._json({"ok": False, "error": refused[1]}, refused[0])
            return
        try:
            body = read_body(raw)
            store = dashboard.store
            command = validate(action, body, store.state, store.meta.get("form") or {}, dashboard.check_start)
            if action == "start" and not store.take_start():
                raise ValueError("no test can start now: one is running, or the run is ending")
        except ValueError as e:
            self._json({"ok": False, "error": str(e)}, 400)
            return
        number = dashboard.put_command(action, command)
        if action != "start":  # (a Start is answered when taken: the page then follows the test's state)
            dashboard.wait_obeyed(number)
        self._json({"ok": True})


def _attachment(ext: str) -> dict[str, str]:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return {"Content-Disposition": f'attachment; filename="squall-{stamp}.{ext}"'}

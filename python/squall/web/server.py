"""The live dashboard's HTTP server: the page, the run's live data (`/api/live`), its controls, the
downloads and Prometheus' `/metrics`.

The run never waits on the server. The thread that drives the run (the hub's, or bench's and mqtt's
progress loop) reads the engine's live stream once a second and hands it to a `LiveStore`; the server's
threads only read the store, under its lock, and queue control commands that the driving thread takes
when it is ready (`Dashboard.commands`). So a browser costs the run one engine read a second, whatever
it asks, and a slow or hostile client holds no lock the run needs.

It binds 127.0.0.1 unless told otherwise. Beyond loopback, the controls (start, stop, users, reset) need
`--web-auth USER:PASS` (HTTP basic authentication over the whole dashboard); without it they are
disabled, with a warning."""

from __future__ import annotations

import base64
import hmac
import ipaddress
import json
import queue
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

from squall.log import get_logs
from squall.report import locust_csv
from squall.web import page
from squall.web.metrics import prometheus

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
        self.timeseries: list[dict[str, Any]] = []
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
            self.timeseries = []
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
            self.timeseries.extend(live["timeseries"])
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

    def view(self, cursor: int) -> dict[str, Any]:
        """The answer to `GET /api/live?cursor=N` (web/README.md)."""
        with self.lock:
            self.last_poll = time.monotonic()
            cursor = max(0, min(cursor, len(self.timeseries)))
            return {
                "state": self.state,
                "kind": self.kind,
                "elapsed_s": 0.0 if self.started is None else time.monotonic() - self.started,
                "users": self.users,
                "target_users": self.target_users,
                "cursor": len(self.timeseries),
                "timeseries": self.timeseries[cursor:],
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

    def current_result(self) -> dict[str, Any]:
        """The final result, or the run so far in the result's shape (for downloads during the run)."""
        with self.lock:
            if self.result is not None:
                return self.result
            agg = self.totals["aggregate"] or {"requests": 0, "failures": 0}
            return {
                "squall_version": self.meta["squall_version"],
                "kind": self.kind,
                "url": self.meta["target"],
                "method": "",
                "start_unix": self.timeseries[0]["unix"] if self.timeseries else time.time(),
                "duration_s": float(len(self.timeseries)),
                "stop_reason": "running",
                "load": self.meta.get("load") or {},
                "aggregate": agg,
                "endpoints": self.totals["endpoints"],
                "errors": self.totals["errors"],
                "exceptions": self.totals.get("exceptions", []),
                "schedule": self.schedule,
                "abandoned": 0,
                "timeseries": list(self.timeseries),
            }


class Dashboard:
    """The server, on its own threads; `commands` holds the control actions for the driving thread:
    ("start", {users, spawn_rate, host}), ("users", {users, spawn_rate}), ("stop", {}), ("reset", {})."""

    def __init__(self, store: LiveStore, host: str, port: int, auth: str | None = None) -> None:
        self.store = store
        self.commands: queue.Queue[tuple[str, dict[str, Any]]] = queue.Queue()
        self.auth = auth
        loopback = _is_loopback(host)
        if not loopback and not auth:
            sys.stderr.write(
                f"squall: warning: the dashboard listens on {host}, beyond loopback, without --web-auth: "
                "anyone who reaches it sees the run; its controls are disabled\n"
            )
            store.meta["controls"] = dict.fromkeys(store.meta["controls"], False)
        handler = type("Handler", (_Handler,), {"dashboard": self})
        self.server = ThreadingHTTPServer((host, port), handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, name="squall-dashboard", daemon=True)

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
        self.server.shutdown()
        self.server.server_close()

    def take_commands(self) -> list[tuple[str, dict[str, Any]]]:
        out = []
        while True:
            try:
                out.append(self.commands.get_nowait())
            except queue.Empty:
                return out


def _is_loopback(host: str) -> bool:
    if host in ("localhost", ""):
        return host == "localhost"
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _number(body: dict[str, Any], key: str, kind: type[int] | type[float], low: float) -> int | float:
    try:
        value = kind(body[key])
    except (KeyError, TypeError, ValueError):
        raise ValueError(f"{key} must be a number") from None
    if value < low:
        raise ValueError(f"{key} must be at least {low:g}")
    return value


class _Handler(BaseHTTPRequestHandler):
    dashboard: Dashboard
    server_version = "squall"
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the console belongs to the run

    def _authorized(self) -> bool:
        auth = self.dashboard.auth
        if not auth:
            return True
        given = self.headers.get("Authorization", "")
        expected = "Basic " + base64.b64encode(auth.encode()).decode()
        if hmac.compare_digest(given.encode(), expected.encode()):
            return True
        self.send_response(401)
        self.send_header("WWW-Authenticate", 'Basic realm="squall"')
        self.send_header("Content-Length", "0")
        self.end_headers()
        return False

    def _send(self, status: int, body: bytes, content_type: str, extra: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, data: Any, status: int = 200) -> None:
        self._send(status, page.to_json(data).encode(), "application/json")

    def do_HEAD(self) -> None:
        self.do_GET()

    def do_GET(self) -> None:
        if not self._authorized():
            return
        url = urlparse(self.path)
        store = self.dashboard.store
        if url.path in ("/", "/index.html"):
            html = page.render({"mode": "live", "meta": store.meta}, inline=False)
            self._send(200, html.encode(), "text/html; charset=utf-8")
        elif url.path in ("/assets/app.js", "/assets/app.css"):
            name = url.path.rsplit("/", 1)[1]
            kind = "text/javascript" if name.endswith(".js") else "text/css"
            self._send(200, page.asset(name), kind + "; charset=utf-8")
        elif url.path == "/api/live":
            try:
                cursor = int(parse_qs(url.query).get("cursor", ["0"])[0])
            except ValueError:
                cursor = 0
            self._json(store.view(cursor))
        elif url.path == "/api/result":
            if store.result is None:
                self._json({"ok": False, "error": "the run has not ended"}, 404)
            else:
                self._json(store.result)
        elif url.path == "/download/result.json":
            self._send(200, page.to_json(store.current_result()).encode(), "application/json", _attachment("json"))
        elif url.path == "/download/stats.csv":
            text = locust_csv.stats_csv(store.current_result())
            self._send(200, text.encode(), "text/csv; charset=utf-8", _attachment("csv"))
        elif url.path in ("/download/failures.csv", "/download/exceptions.csv"):
            make = locust_csv.failures_csv if url.path == "/download/failures.csv" else locust_csv.exceptions_csv
            text = make(store.current_result())
            self._send(200, text.encode(), "text/csv; charset=utf-8", _attachment(url.path[10:-4] + ".csv"))
        elif url.path == "/api/logs":
            self._json({"lines": get_logs()})
        elif url.path == "/api/tasks":
            with store.lock:
                tasks = store.tasks
            self._json(tasks or {"per_class": {}, "total": {}})
        elif url.path == "/download/report.html":
            html = page.report(store.current_result(), store.meta)
            self._send(200, html.encode(), "text/html; charset=utf-8", _attachment("html"))
        elif url.path == "/metrics":
            body = prometheus(store.current_result(), store.view(1 << 62), store.kind)
            self._send(200, body.encode(), "text/plain; version=0.0.4; charset=utf-8")
        else:
            self._send(404, b"not found\n", "text/plain")

    def do_POST(self) -> None:
        if not self._authorized():
            return
        path = urlparse(self.path).path
        action = path.removeprefix("/api/")
        controls = self.dashboard.store.meta["controls"]
        if path == action or action not in ("start", "users", "stop", "reset"):
            self._json({"ok": False, "error": f"no such action: {path}"}, 404)
            return
        if not controls.get(action):
            self._json({"ok": False, "error": f"{action} is not available for this run"}, 403)
            return
        try:
            length = int(self.headers.get("Content-Length") or 0)
            if length > 65536:
                raise ValueError("request too large")
            body = json.loads(self.rfile.read(length) or b"{}") if length else {}
            if not isinstance(body, dict):
                raise ValueError("the body must be a JSON object")
            store = self.dashboard.store
            command = _validate(action, body, store.state, store.meta.get("form") or {})
            if action == "start" and not store.take_start():
                raise ValueError("no test can start now: one is running, or the run is ending")
        except ValueError as e:
            self._json({"ok": False, "error": str(e)}, 400)
            return
        self.dashboard.commands.put((action, command))
        self._json({"ok": True})


def _validate(action: str, body: dict[str, Any], state: str, form: dict[str, Any] | None = None) -> dict[str, Any]:
    """A control command's arguments, checked here so that the driving thread gets only valid ones."""
    if action == "start":
        if state not in ("ready", "stopped"):
            raise ValueError("a test is running: stop it first")
        form = form or {}
        host = str(body.get("host") or "").strip()
        if host and not host.startswith(("http://", "https://")):
            raise ValueError("host must start with http:// or https://")
        if not host and form.get("host_required"):
            raise ValueError(f"a host is needed: {form['host_required']} has no host attribute and none was given")
        return {
            "users": int(_number(body, "users", int, 1)),
            "spawn_rate": float(_number(body, "spawn_rate", float, 0.001)),
            "host": host,
        }
    if action == "users":
        if state not in ("spawning", "running"):
            raise ValueError("the run is not running")
        return {
            "users": int(_number(body, "users", int, 0)),
            "spawn_rate": float(_number(body, "spawn_rate", float, 0.001)),
        }
    return {}


def _attachment(ext: str) -> dict[str, str]:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return {"Content-Disposition": f'attachment; filename="squall-{stamp}.{ext}"'}

"""`environment.web_ui.app` under `squall -f`: Locust's web UI is a Flask app, and locustfiles extend it
(routes, blueprints, `after_request` hooks: Locust's extend_web_ui.py, bottlenecked_server.py,
response_validations.py, ...). squall's dashboard is not Flask, so a Flask app of the same surface is
served beside it: a request for a path the dashboard does not serve goes to the app (the dashboard's
checks of Host, credentials and a foreign site's page come first, and a POST must not come from
another origin's page), which has the locustfile's routes and Locust's `locust` blueprint (`index`,
`login`, `/stats/requests` and `/exceptions` in Locust's JSON, read from the dashboard's live data).
Its template `index.html` (Locust's page, which a route adding a tab renders with `template_args`) is
the dashboard's page, with the tabs and CSV files the route adds (`extension_of`).

`--web-login` (Locust's): Flask-Login guards the dashboard. Its own pages and data then need a user
the locustfile's `environment.web_ui.login_manager` knows (the file sets its `user_loader`, its login
routes and `web_ui.auth_args`, as for Locust); anyone else is sent to `/login`, a form made from
`auth_args` (username and password, providers' links, a custom form), posted to the file's routes.

Flask loads only when a file touches `web_ui.app` (or with --web-login): `squall bench` and most
locustfiles never import it."""

from __future__ import annotations

import html
import io
import sys
import time
import traceback
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Callable
from urllib.parse import quote, unquote, urlsplit

from squall.report.units import percentiles_us
from squall.web.guard import HEADERS

if TYPE_CHECKING:
    from http.server import BaseHTTPRequestHandler

    from flask import Flask

    from squall.env import Environment
    from squall.web.server import Dashboard

# What the dashboard serves itself: never the app's (the app has Locust's `index` and `login` endpoints
# for url_for, but "/" is the dashboard's page).
OWN_PATHS = frozenset({"/", "/index.html", "/assets/app.js", "/assets/app.css", "/metrics"})
OWN_PREFIXES = ("/api/", "/download/")


def own_path(path: str) -> bool:
    return path in OWN_PATHS or path.startswith(OWN_PREFIXES)


class LocustFlask:
    """The Flask app of `web_ui.app`, and how the dashboard's server hands requests to it."""

    def __init__(self, environment: Environment, dashboard: Dashboard, web_login: bool) -> None:
        # Flask only here, for start-up: see the module's doc.
        from flask import Blueprint, Flask, jsonify, redirect, request, session

        self.environment = environment
        self.dashboard = dashboard
        self.web_login = web_login
        self.auth_args: dict[str, Any] = {}
        self.login_manager: Any = None
        app = Flask(__name__)  # (Locust's is named after its module too; the name looks up nothing here)
        app.debug = True  # as Locust's: a route's exception reaches the server (a plain 500, its traceback)
        self.app: Flask = app
        self._page_template(app)
        if web_login:
            from flask_login import LoginManager  # type: ignore[import-untyped]  # no stubs

            self.login_manager = LoginManager()
            self.login_manager.init_app(app)
            self.login_manager.login_view = "locust.login"
        locust = Blueprint("locust", __name__)

        @locust.route("/")
        def index() -> Any:  # the dashboard's page; here for url_for("locust.index")
            return redirect("/")

        @locust.route("/login")
        def login() -> Any:
            if not web_login:
                return redirect("/")
            error, info = session.get("auth_error"), session.get("auth_info")
            return login_page(self.auth_args, error, info, request.args.get("next"))

        @locust.route("/stats/requests")
        @self.auth_required_if_enabled
        def stats_requests() -> Any:
            return jsonify(locust_stats(_snapshot(self.dashboard.store)))

        @locust.route("/exceptions")
        @self.auth_required_if_enabled
        def exceptions() -> Any:
            rows = _snapshot(self.dashboard.store)["totals"].get("exceptions") or []
            return jsonify(
                {
                    "exceptions": [
                        {"count": x["count"], "msg": x["message"], "traceback": x["traceback"], "nodes": "local"}
                        for x in rows
                    ]
                }
            )

        app.register_blueprint(locust)

    def _page_template(self, app: Flask) -> None:
        """The app's own templates (found before its blueprints', as Locust's build folder is): Locust's
        page `index.html`, which is the dashboard's page here. Rendered by a locustfile's route, as
        `render_template("index.html", template_args={...})` (Locust's extend_web_ui.py) or with the
        arguments spread (`**template_args`, older files), it shows the tabs and CSV files they add."""
        from jinja2 import DictLoader, pass_context
        from markupsafe import Markup

        @pass_context
        def dashboard_page(context: Any) -> Markup:
            given = context.get("template_args")
            args = given if isinstance(given, Mapping) else context.get_all()
            return Markup(self.dashboard.live_page(extension_of(args)))

        app.jinja_loader = DictLoader({"index.html": "{{ squall_dashboard_page() }}"})
        app.jinja_env.globals["squall_dashboard_page"] = dashboard_page

    def auth_required_if_enabled(self, view: Callable[..., Any]) -> Callable[..., Any]:
        """Locust's decorator: the view needs a logged-in user with --web-login."""
        if not self.web_login:
            return view
        from flask_login import login_required  # with --web-login only (see the module's doc)

        return login_required(view)  # type: ignore[no-any-return]

    # The dashboard's side: called from its server's threads, after its checks.

    def takes(self, handler: BaseHTTPRequestHandler, path: str, body: bytes = b"") -> bool:
        """Whether the app answered this request: a path of the app's (or a login needed first for one of
        the dashboard's own); False: the dashboard serves it."""
        if own_path(path):
            if self.web_login and not self._logged_in(handler):
                target = "/login?next=" + quote(handler.path, safe="")
                _reply(handler, 302, [("Location", target)], b"")
                return True
            return False
        if handler.command not in ("GET", "HEAD") and _foreign(handler):
            refused = b"squall: a page of another origin cannot post here\n"
            _reply(handler, 403, [("Content-Type", "text/plain")], refused)
            return True
        status, headers, out = self.call(handler, body)
        _reply(handler, int(status.split(" ", 1)[0]), headers, out, status.partition(" ")[2])
        return True

    def call(self, handler: BaseHTTPRequestHandler, body: bytes) -> tuple[str, list[tuple[str, str]], bytes]:
        """The app's answer to the handler's request (WSGI, in this thread): its status line ("404 NOT
        FOUND": Flask's reason, which Locust's server sends too), headers and body."""
        answer: dict[str, Any] = {}

        def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            answer["status"], answer["headers"] = status, headers
            return lambda data: chunks.append(data)

        chunks: list[bytes] = []
        try:
            result = self.app.wsgi_app(environ(handler, body), start_response)
        except Exception:  # as gevent's WSGI server under Locust: the traceback, and a plain 500
            traceback.print_exc()
            return "500 Internal Server Error", [("Content-Type", "text/plain")], b"Internal Server Error"
        try:
            chunks.extend(result)
        finally:
            close = getattr(result, "close", None)
            if close is not None:
                close()
        return answer["status"], answer["headers"], b"".join(chunks)

    def _logged_in(self, handler: BaseHTTPRequestHandler) -> bool:
        from flask_login import current_user  # with --web-login only (see the module's doc)

        with self.app.request_context(environ(handler, b"")):
            try:
                return bool(current_user.is_authenticated)
            except Exception as e:  # no user_loader yet, a broken one: nobody is logged in
                sys.stderr.write(f"squall: --web-login: the locustfile's login manager failed: {e}\n")
                return False


def extension_of(args: Mapping[str, Any]) -> dict[str, Any] | None:
    """What a locustfile's route adds to the page it renders, from Locust's `template_args`:
    `extended_tabs` ([{key, title}]), `extended_tables` ([{key, structure: [{key, title}]}]) and
    `extended_csv_files` ([{href, title}]). The page shows each tab as a section whose table has the
    columns of its key's structure (None: the keys of its first row) and the rows of its key's
    `extended_stats` entry in `/stats/requests` (which the file's after_request hook adds), and the CSV
    files among its downloads (a link elsewhere than a web address or a path of the UI is left out).
    None when it adds nothing."""

    def entries(name: str) -> list[Mapping[str, Any]]:
        value = args.get(name)
        return [e for e in value if isinstance(e, Mapping)] if isinstance(value, (list, tuple)) else []

    columns = {
        str(t.get("key")): [
            {"key": str(c.get("key")), "title": str(c.get("title") or c.get("key"))}
            for c in t.get("structure") or []
            if isinstance(c, Mapping)
        ]
        for t in entries("extended_tables")
    }
    tabs = [
        {"key": key, "title": str(t.get("title") or key), "columns": columns.get(key)}
        for t in entries("extended_tabs")
        if (key := str(t.get("key") or ""))
    ]
    files = [
        {"href": href, "title": str(f.get("title") or href)}
        for f in entries("extended_csv_files")
        if _web_link(href := str(f.get("href") or ""))
    ]
    return {"tabs": tabs, "csv_files": files} if tabs or files else None


def _web_link(href: str) -> bool:
    """A path or an http(s) address: no `javascript:` (nor one a browser would read as it, with spaces
    or control characters it drops)."""
    return bool(href) and all(ord(c) > 32 for c in href) and urlsplit(href).scheme.lower() in ("", "http", "https")


def environ(handler: BaseHTTPRequestHandler, body: bytes) -> dict[str, Any]:
    """The WSGI environ of the request the dashboard's handler read (PEP 3333)."""
    parts = urlsplit(handler.path)
    host, _, port = (handler.headers.get("Host") or "localhost").rpartition(":")
    if not host or not port.isdigit():
        host, port = handler.headers.get("Host") or "localhost", str(handler.server.server_address[1])  # type: ignore[index]
    env: dict[str, Any] = {
        "REQUEST_METHOD": handler.command,
        "SCRIPT_NAME": "",
        "PATH_INFO": unquote(parts.path, "latin-1"),
        "QUERY_STRING": parts.query,
        "SERVER_NAME": host,
        "SERVER_PORT": port,
        "SERVER_PROTOCOL": handler.request_version,
        "REMOTE_ADDR": handler.client_address[0],
        "CONTENT_LENGTH": str(len(body)),
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(body),
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": False,
        "wsgi.run_once": False,
    }
    for name, value in handler.headers.items():
        key = name.upper().replace("-", "_")
        if key == "CONTENT_TYPE":
            env[key] = value
        elif key != "CONTENT_LENGTH":
            env.setdefault(f"HTTP_{key}", value)  # the first of repeated headers
    return env


def _foreign(handler: BaseHTTPRequestHandler) -> bool:
    """A browser's request from another origin's page (its Origin or Sec-Fetch-Site says so): the
    dashboard's own rule for its controls (squall.web.guard), without its token (the app's routes are
    the locustfile's: its users post to them too)."""
    origin = handler.headers.get("Origin")
    if origin is not None:
        host = (handler.headers.get("Host") or "").strip().lower()
        if not host or origin.strip().lower() not in (f"http://{host}", f"https://{host}"):
            return True
    site = handler.headers.get("Sec-Fetch-Site")
    return site is not None and site not in ("same-origin", "none")


def _reply(
    handler: BaseHTTPRequestHandler, status: int, headers: list[tuple[str, str]], body: bytes, reason: str | None = None
) -> None:
    handler.send_response(status, reason or None)
    given = {k.lower() for k, _ in headers}
    for k, v in headers:
        if k.lower() not in ("content-length", "transfer-encoding", "connection"):
            handler.send_header(k, v)
    for k, v in HEADERS.items():  # the dashboard's: never framed, never read by another origin
        if k.lower() not in given:
            handler.send_header(k, v)
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    if handler.command != "HEAD":
        handler.wfile.write(body)


def _snapshot(store: Any) -> dict[str, Any]:
    """What the live store holds now (read under its lock, as the dashboard's own reads are)."""
    with store.lock:
        last = store.seconds.last or {}
        elapsed = 0.0 if store.started is None else time.monotonic() - store.started
        return {"totals": store.totals, "last": last, "state": store.state, "users": store.users, "elapsed": elapsed}


def locust_stats(view: dict[str, Any]) -> dict[str, Any]:
    """Locust's `/stats/requests` JSON from the dashboard's live data (`_snapshot`): each endpoint's
    `to_dict()`, then the Aggregated row, the errors, the totals, the state and the users. Current rates
    are the last second's."""
    totals, last, seconds = view["totals"], view["last"], max(view["elapsed"], 1.0)
    current = {(e.get("method"), e.get("name")): e for e in last.get("endpoints") or []}
    rows = [
        _entry(r, current.get((r.get("method"), r.get("name")), {}), seconds) for r in totals.get("endpoints") or []
    ]
    agg = totals.get("aggregate")
    total = _entry(agg or {"method": "", "name": "Aggregated"}, last, seconds)
    errors = [
        {
            "method": e.get("method", ""),
            "name": e.get("name", ""),
            "error": html.escape(str(e.get("locust") or e.get("error", ""))),
            "occurrences": e.get("count", 0),
        }
        for e in totals.get("errors") or []
    ]
    return {
        "stats": [*rows, total],
        "errors": errors,
        "current_rps": total["current_rps"],
        "current_fail_per_sec": total["current_fail_per_sec"],
        "total_rps": total["total_rps"],
        "total_fail_per_sec": total["total_fail_per_sec"],
        "fail_ratio": total["num_failures"] / total["num_requests"] if total["num_requests"] else 0.0,
        "current_response_time_percentiles": {
            "response_time_percentile_0.5": total["median_response_time"],
            "response_time_percentile_0.95": total["response_time_percentile_0.95"],
        },
        "state": view.get("state"),
        "user_count": view.get("users", 0),
    }


def _entry(r: dict[str, Any], second: dict[str, Any], seconds: float) -> dict[str, Any]:
    """One row of Locust's `to_dict()` from a live totals row, its last second and the test's length."""
    n = int(r.get("requests", 0))
    pct = r.get("percentiles_us") or {}
    # Locust's PERCENTILES_TO_STATISTICS, as a locustfile may set it (0.95 and 0.99 by default)
    statistics = [float(p) for p in getattr(sys.modules.get("squall.stats"), "PERCENTILES_TO_STATISTICS", [0.95, 0.99])]
    times = (percentiles_us(r, [round(100 * p, 6) for p in statistics]) if n else None) or [0.0] * len(statistics)
    return {
        "method": r.get("method", ""),
        "name": r.get("name", ""),
        "num_requests": n,
        "num_failures": int(r.get("failures", 0)),
        "min_response_time": r.get("min_us", 0) / 1000 if n else 0,
        "max_response_time": r.get("max_us", 0) / 1000 if n else 0,
        "avg_response_time": r.get("mean_us", 0.0) / 1000 if n else 0,
        "median_response_time": pct.get("50", 0) / 1000 if n else 0,
        "current_rps": float(second.get("requests", 0)),
        "current_fail_per_sec": float(second.get("failures", 0)),
        "total_rps": n / seconds,
        "total_fail_per_sec": int(r.get("failures", 0)) / seconds,
        **{f"response_time_percentile_{p}": t / 1000 for p, t in zip(statistics, times)},
        "avg_content_length": r.get("body_bytes", 0) / n if n else 0,
    }


def login_page(auth_args: dict[str, Any], error: str | None, info: str | None, next_path: str | None) -> str:
    """The `/login` page of --web-login, from the locustfile's `web_ui.auth_args` (Locust's keys)."""
    e = html.escape
    title = e(str(auth_args.get("title") or "squall"))
    parts = [f"<!doctype html><meta charset=utf-8><title>{title}: log in</title>", f"<h1>{title}</h1>"]
    for cls, text in (("error", error or auth_args.get("error")), ("info", info or auth_args.get("info"))):
        if text:
            parts.append(f'<p class="{cls}">{e(str(text))}</p>')
    callback = auth_args.get("username_password_callback")
    if callback:
        parts.append(
            f'<form method="post" action="{e(str(callback))}"><label>Username <input name="username"></label>'
            '<label>Password <input name="password" type="password"></label><button>Log in</button></form>'
        )
    form = auth_args.get("custom_form")
    if form:
        inputs = "".join(
            f'<label>{e(str(i.get("label") or i.get("name")))} <input name="{e(str(i.get("name")))}" '
            f'type="{e(str(i.get("type") or "text"))}"></label>'
            for i in form.get("inputs") or []
        )
        button = e(str(form.get("submit_button_text") or "Log in"))
        action = e(str(form.get("callback_url")))
        parts.append(f'<form method="post" action="{action}">{inputs}<button>{button}</button></form>')
    for provider in auth_args.get("auth_providers") or []:
        link, label = e(str(provider.get("callback_url"))), e(str(provider.get("label") or "Log in"))
        parts.append(f'<p><a href="{link}">{label}</a></p>')
    if not (callback or form or auth_args.get("auth_providers")):
        parts.append(
            "<p>--web-login is on, and the locustfile sets no way to log in: it sets "
            "<code>environment.web_ui.auth_args</code> and its login routes, as for Locust.</p>"
        )
    if next_path:
        parts.append(f"<!-- after login: {e(next_path)} -->")
    return "\n".join(parts) + "\n"

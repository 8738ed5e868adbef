"""websocket-client's API (`import websocket` in a locustfile) on the engine's WebSocket.

While squall runs a locustfile, `import websocket` resolves to this module (squall.locust_compat), so that
files written for Locust on websocket-client (`websocket.create_connection(url)`, `ws.send`, `ws.recv`, a
greenlet reading while the user sends), and python-socketio's client, whose Engine.IO transport is
websocket-client, run their WebSocket in the engine: the handshake, frames, pings and reads in Rust, one
crossing from Python per call. Nothing is recorded by the engine: the file fires its own events, as under
Locust, so the statistics are the file's, row for row. `SQUALL_WEBSOCKET=library` in the environment keeps
`import websocket` websocket-client's own (docs/websocket.md).

What runs on the engine: `create_connection(url, timeout=None, header=..., cookie=..., origin=...,
suppress_origin=..., host=..., subprotocols=...)` and `WebSocket().connect(url, ...)`; `send`, `send_text`,
`send_bytes`, `send_binary`, `send_frame` (a whole frame), `ping`, `pong`, `recv`, `recv_data`, iteration,
`settimeout`/`gettimeout`/`timeout`, `close(status, reason, timeout)`, `send_close`, `abort`, `shutdown`,
`connected`, `status`; a connection's receives served in the order they were asked for, while its sends
go out beside them; the exceptions, `ABNF` and its opcodes, `WebSocketApp` and the rest of the library's
names are websocket-client's own (it must be installed for those, as under Locust).

What falls back to websocket-client itself (a connection of its own, on gevent, at Python speed): a
connection made outside a user's greenlets (module level, a `test_start` listener: no user waits on the
engine there), or with what the engine does not do: a proxy (`http_proxy_host`, ...), `sockopt`, `sslopt`
on wss://, a pre-made `socket`, `get_mask_key`, `fire_cont_frame`, `dispatcher`, `suppress_host`,
`connection`, or a `class_` that is not this module's `WebSocket`. Without websocket-client installed,
those fail with a one-line WebSocketException that says why.

Differences that remain: the handshake's response headers are not kept (`headers` is {} and
`subprotocol` None); a refused handshake's WebSocketBadStatusException says the status and its reason,
not the headers and body; `recv_data(control_frame=True)` returns data frames only (the engine answers
the server's pings itself); a message larger than 16 MB fails the connection; `fileno` has no socket to
give. A connection the file never closes is closed when its user stops."""

from __future__ import annotations

import contextlib
import importlib.machinery
import importlib.util
import re
import struct
import sys
from collections import deque
from http import HTTPStatus
from types import ModuleType
from typing import TYPE_CHECKING, Any, Callable
from urllib.parse import urlsplit

from greenlet import getcurrent

from squall.runtime.hub import current_hub

if TYPE_CHECKING:
    from collections.abc import Iterator

    from squall._engine import Completion, ScriptEngine
    from squall.runtime.hub import Hub


def _load_library() -> ModuleType | None:
    """websocket-client itself (its exceptions, ABNF, WebSocketApp, and the connections the engine does not
    make), loaded under its own name as an import of it would, or None if it is not installed."""
    known = sys.modules.get("websocket")
    if known is not None and hasattr(known, "__path__"):
        return known
    spec = importlib.machinery.PathFinder.find_spec("websocket")
    if spec is None or spec.loader is None:
        return None
    module = importlib.util.module_from_spec(spec)
    # Its modules import one another as `websocket._abnf`, ...: the package is `websocket` while it loads
    # (then this module takes the name back: the import that loads it sets it).
    sys.modules["websocket"] = module
    try:
        spec.loader.exec_module(module)
    finally:
        if known is None:
            del sys.modules["websocket"]
        else:
            sys.modules["websocket"] = known
    return module


_library = _load_library()


class _WebSocketException(Exception):
    """websocket-client's base exception, when it is not installed (these stand for its own)."""


class _WebSocketBadStatusException(_WebSocketException):
    def __init__(
        self,
        message: str,
        status_code: int,
        status_message: str | None = None,
        resp_headers: dict[str, str] | None = None,
        resp_body: bytes | None = None,
    ) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.status_message = status_message
        self.resp_headers = resp_headers
        self.resp_body = resp_body


class _ABNF:
    """websocket-client's frame opcodes, when it is not installed."""

    OPCODE_CONT = 0x0
    OPCODE_TEXT = 0x1
    OPCODE_BINARY = 0x2
    OPCODE_CLOSE = 0x8
    OPCODE_PING = 0x9
    OPCODE_PONG = 0xA


def _stand_in(name: str) -> type[Exception]:
    return type(name, (_WebSocketException,), {"__module__": "websocket"})


WebSocketException: type[Exception]
WebSocketProtocolException: type[Exception]
WebSocketPayloadException: type[Exception]
WebSocketConnectionClosedException: type[Exception]
WebSocketTimeoutException: type[Exception]
WebSocketProxyException: type[Exception]
WebSocketBadStatusException: type[Exception]
WebSocketAddressException: type[Exception]
ABNF: Any
WebSocketApp: Any
if _library is not None:
    _exc = _library._exceptions  # (its submodules keep their names: websocket._exceptions, ...)
    WebSocketException = _exc.WebSocketException
    WebSocketProtocolException = _exc.WebSocketProtocolException
    WebSocketPayloadException = _exc.WebSocketPayloadException
    WebSocketConnectionClosedException = _exc.WebSocketConnectionClosedException
    WebSocketTimeoutException = _exc.WebSocketTimeoutException
    WebSocketProxyException = _exc.WebSocketProxyException
    WebSocketBadStatusException = _exc.WebSocketBadStatusException
    WebSocketAddressException = _exc.WebSocketAddressException
    ABNF, WebSocketApp, __version__ = _library.ABNF, _library.WebSocketApp, _library.__version__
else:
    WebSocketException = _WebSocketException
    WebSocketProtocolException = _stand_in("WebSocketProtocolException")
    WebSocketPayloadException = _stand_in("WebSocketPayloadException")
    WebSocketConnectionClosedException = _stand_in("WebSocketConnectionClosedException")
    WebSocketTimeoutException = _stand_in("WebSocketTimeoutException")
    WebSocketProxyException = _stand_in("WebSocketProxyException")
    WebSocketBadStatusException = _WebSocketBadStatusException
    WebSocketAddressException = _stand_in("WebSocketAddressException")
    ABNF, WebSocketApp, __version__ = _ABNF, None, "1.9.2"


STATUS_NORMAL = 1000
# Options the engine's connection takes (create_connection's and connect's keywords); others need the library.
_ENGINE_OPTIONS = frozenset(
    ("header", "cookie", "origin", "suppress_origin", "host", "subprotocols", "timeout", "enable_multithread",
     "skip_utf8_validation", "redirect_limit", "http_no_proxy", "sslopt", "sockopt")
)  # fmt: skip
# The library's WebSocket constructor's keywords (create_connection passes the rest to connect).
_CONSTRUCTOR = ("sockopt", "sslopt", "fire_cont_frame", "enable_multithread", "skip_utf8_validation")
_CLOSED_BY_SCRIPT = "(closed by the script)"  # script/websocket.rs: CLOSED_BY_SCRIPT
_STOPPED = "(the user stopped)"

_default_timeout: float | None = None


def setdefaulttimeout(timeout: float | None) -> None:
    """The timeout of connections made without one (websocket-client's global default)."""
    global _default_timeout
    _default_timeout = timeout
    if _library is not None:
        _library.setdefaulttimeout(timeout)


def getdefaulttimeout() -> float | None:
    return _default_timeout


def _needs_library(url: str, options: dict[str, Any]) -> str | None:
    """Why a connection with `options` is websocket-client's own, not the engine's (None: the engine's)."""
    for key, value in options.items():
        if key not in _ENGINE_OPTIONS and value:
            return f"the engine's WebSocket does not take {key}="
    if options.get("sockopt"):
        return "the engine's WebSocket does not take sockopt="
    if options.get("sslopt") and url.lower().startswith("wss:"):
        return "the engine's WebSocket takes the run's TLS settings (--insecure), not sslopt="
    return None


def _engine_here() -> Hub | None:
    """The run's hub, if the calling greenlet may wait on the engine: a user's, or one a user or a
    library spawned during the run (not the run's driver, nor the hub itself, nor outside a run)."""
    hub = current_hub()
    if hub is None or hub.finished:
        return None
    g = getcurrent()
    if g is hub.main or g is hub.driver:
        return None
    return hub


def _owner() -> int | None:
    """The user whose greenlet, or whose greenlets' greenlet, is running: its stop closes the connection."""
    g: Any = getcurrent()
    for _ in range(1000):
        if g is None:
            return None
        user_id = getattr(g, "squall_user_id", None)  # a user's own greenlet (squall.runtime.spawner)
        if user_id is not None:
            return int(user_id)
        owner = getattr(g, "_owner", False)  # squall's own gevent's greenlets (squall.gevent_compat)
        if owner is not False:
            return None if owner is None or owner is True else int(owner.user_id)
        parent = getattr(g, "spawning_greenlet", None)  # gevent's: a weak reference to who spawned it
        g = parent() if parent is not None else None
    return None


def _library_needed(why: str) -> Exception:
    return WebSocketException(f"{why}: websocket-client must be installed for it (pip install websocket-client)")


def _frame_length(payload_length: int) -> int:
    """The bytes a client frame of this payload takes: what websocket-client's send returns."""
    extended = 0 if payload_length < 126 else 2 if payload_length < 1 << 16 else 8
    return 2 + extended + 4 + payload_length


class WebSocket:
    """websocket-client's `WebSocket`, its connection in the engine (module doc)."""

    def __init__(
        self,
        get_mask_key: Callable[[int], bytes] | None = None,
        sockopt: Any = None,
        sslopt: dict[str, Any] | None = None,
        fire_cont_frame: bool = False,
        enable_multithread: bool = True,
        skip_utf8_validation: bool = False,
        **options: Any,
    ) -> None:
        self.connected = False
        self.close_frame: Any = None
        self.sock_timeout: float | None = _default_timeout
        self._options = {
            "sockopt": sockopt,
            "sslopt": sslopt,
            "get_mask_key": get_mask_key,
            "fire_cont_frame": fire_cont_frame,
            "enable_multithread": enable_multithread,
            "skip_utf8_validation": skip_utf8_validation,
            "dispatcher": options.get("dispatcher"),
        }
        self._real: Any = None  # websocket-client's own connection, when the engine cannot make it
        self._socket: int | None = None  # the engine's id of the connection
        self._hub: Hub | None = None
        self._engine: ScriptEngine | None = None
        self._told = False  # the server's close frame was received: the next recv says the connection is lost
        self._unread: deque[Completion] = deque()  # messages a receive thrown out of its wait had taken
        self._status: int | None = None

    # --- the connection ---

    def connect(self, url: str, **options: Any) -> None:
        """Opens the WebSocket at `url` (ws:// or wss://) in the engine."""
        scheme = url.partition(":")[0].lower()
        if scheme not in ("ws", "wss"):
            raise ValueError(f"scheme {scheme} is invalid")
        ours = ("sockopt", "sslopt", "get_mask_key", "fire_cont_frame", "dispatcher")
        why = _needs_library(url, {**options, **{k: self._options[k] for k in ours if self._options[k]}})
        hub = _engine_here()
        if why is None and hub is None:
            why = "a connection made outside the users' greenlets"
        if why is not None:
            if _library is None:
                raise _library_needed(why)
            # websocket-client's own connection: this object becomes a view of it (`_OnTheLibrary`).
            made = {k: v for k, v in self._options.items() if v is not None}
            real = _library.WebSocket(**made)
            real.settimeout(self.sock_timeout)
            self._real = real
            self.__class__ = _OnTheLibrary
            real.connect(url, **options)
            return
        assert hub is not None
        self.close_frame = None
        if "timeout" in options:
            self.sock_timeout = options["timeout"]
        engine = hub.engine
        socket, op = engine.ws_client_connect(_owner(), url, _handshake_headers(url, options), self.sock_timeout)
        self._hub, self._engine, self._socket, self._told = hub, engine, socket, False
        self._unread.clear()
        c = self._wait(op)
        if c.error is not None:
            self._socket = None
            raise _exception(c, "connect")
        self.connected = True
        self._status = 101

    def settimeout(self, timeout: float | None) -> None:
        self.sock_timeout = timeout

    def gettimeout(self) -> float | None:
        return self.sock_timeout

    timeout = property(gettimeout, settimeout)

    def getstatus(self) -> int | None:
        return self._status

    status = property(getstatus)

    def getheaders(self) -> dict[str, str] | None:
        return {} if self._status is not None else None  # (the engine does not keep the handshake's answer)

    headers = property(getheaders)

    def getsubprotocol(self) -> str | None:
        return None

    subprotocol = property(getsubprotocol)

    def is_ssl(self) -> bool:
        return False

    def fileno(self) -> int:
        raise WebSocketException("squall's engine holds this WebSocket's socket: it has no file descriptor here")

    def set_mask_key(self, func: Callable[[int], bytes]) -> None:
        raise WebSocketException(
            "the engine masks frames itself: make the connection with get_mask_key= (websocket-client's own)"
        )

    # --- sending ---

    def send(self, payload: str | bytes | bytearray, opcode: int = ABNF.OPCODE_TEXT) -> int:
        """Sends a message (text unless `opcode` says otherwise); returns the frame's length, as
        websocket-client does. Done once written."""
        data = payload.encode() if isinstance(payload, str) else bytes(payload)
        if opcode in (ABNF.OPCODE_TEXT, ABNF.OPCODE_BINARY):
            self._run(lambda e, s: e.ws_client_send(s, data, opcode == ABNF.OPCODE_BINARY), sending=True)
        elif opcode in (ABNF.OPCODE_PING, ABNF.OPCODE_PONG):
            self._run(lambda e, s: e.ws_client_control(s, opcode == ABNF.OPCODE_PING, data), sending=True)
        elif opcode == ABNF.OPCODE_CLOSE:
            code = struct.unpack("!H", data[:2])[0] if len(data) >= 2 else STATUS_NORMAL
            self._close(code, data[2:], 0.0)
        else:
            raise WebSocketException(f"squall's engine sends whole messages: opcode {opcode} is not one")
        return _frame_length(len(data))

    def send_text(self, text_data: str) -> int:
        return self.send(text_data, ABNF.OPCODE_TEXT)

    def send_bytes(self, data: bytes | bytearray) -> int:
        return self.send(data, ABNF.OPCODE_BINARY)

    def send_binary(self, payload: bytes) -> int:
        return self.send(payload, ABNF.OPCODE_BINARY)

    def send_frame(self, frame: Any) -> int:
        """A whole frame (`ABNF.create_frame(data, opcode)`, fin set): its message sent."""
        if not getattr(frame, "fin", 1):
            raise WebSocketException("squall's engine sends whole messages: a fragment (fin=0) is not one")
        return self.send(frame.data, frame.opcode)

    def ping(self, payload: str | bytes = "") -> None:
        self.send(payload, ABNF.OPCODE_PING)

    def pong(self, payload: str | bytes = "") -> None:
        self.send(payload, ABNF.OPCODE_PONG)

    # --- receiving ---

    def recv(self) -> str | bytes:
        """The next message: str for text, bytes for binary, "" for the server's close frame (then
        `connected` is False), as websocket-client's recv."""
        opcode, data = self.recv_data()
        if opcode == ABNF.OPCODE_TEXT:
            return data.decode()
        if opcode == ABNF.OPCODE_BINARY:
            return data
        return ""

    def recv_data(self, control_frame: bool = False) -> tuple[int, bytes]:
        """(opcode, payload) of the next message; the server's close frame is (OPCODE_CLOSE, b"")."""
        c = self._unread.popleft() if self._unread else None
        if c is None:
            c = self._run(lambda e, s: e.ws_client_recv(s, self.sock_timeout), keep=True)
        if c.status == ABNF.OPCODE_CLOSE:
            # The server's close frame: "" now, and the next recv finds the connection lost, as
            # websocket-client's reads the end after it. The engine's connection is done with.
            self.connected = False
            self._told = True
            self._release()
            return ABNF.OPCODE_CLOSE, b""
        return (ABNF.OPCODE_BINARY if c.binary else ABNF.OPCODE_TEXT), c.content

    def __iter__(self) -> Iterator[str | bytes]:
        while True:
            yield self.recv()

    def __next__(self) -> str | bytes:
        return self.recv()

    def next(self) -> str | bytes:
        return self.__next__()

    # --- closing ---

    def close(self, status: int = STATUS_NORMAL, reason: str | bytes = b"", timeout: float | None = 3) -> None:
        """Sends a close frame, waits up to `timeout` seconds for the server's, and drops the connection."""
        if not self.connected:
            return
        if status < 0 or status >= 1 << 16:
            raise ValueError("code is invalid range")
        self._close(status, reason.encode() if isinstance(reason, str) else bytes(reason), timeout)

    def send_close(self, status: int = STATUS_NORMAL, reason: str | bytes = b"") -> None:
        if status < 0 or status >= 1 << 16:
            raise ValueError("code is invalid range")
        self._close(status, reason.encode() if isinstance(reason, str) else bytes(reason), 0.0)

    def abort(self) -> None:
        """Drops the connection at once: a receive waiting meets its end."""
        if self.connected:
            self._close(STATUS_NORMAL, b"", 0.0)

    def shutdown(self) -> None:
        self.abort()

    def _close(self, code: int, reason: bytes, wait: float | None) -> None:
        self.connected = False
        if self._socket is None or self._engine is None or self._engine is not _current_engine(self._hub):
            self._socket = None
            return
        wait_s = 1e9 if wait is None else float(wait)
        with contextlib.suppress(WebSocketException, OSError):
            self._run(lambda e, s: e.ws_client_close(s, code, reason, wait_s))
        self._release()

    def _release(self) -> None:
        """The engine's connection is done with (closed, or ended by the server): its task and socket go
        now, not when the user stops (a file that opens a connection a task would hold them all)."""
        socket, engine = self._socket, self._engine
        self._socket = None
        if socket is not None and engine is not None and engine is _current_engine(self._hub):
            engine.ws_client_forget(socket)

    # --- waiting on the engine ---

    def _run(self, submit: Callable[[ScriptEngine, int], int], keep: bool = False, sending: bool = False) -> Completion:
        """Submits an operation on this connection and waits for it; raises websocket-client's exception
        for its failure. `keep`: a message it took when the caller was thrown out is kept for the next
        receive."""
        socket, engine = self._socket, self._engine
        if socket is None or engine is None or engine is not _current_engine(self._hub):
            # No connection (never made, closed, ended, or gone with its test's engine): websocket-client's
            # words for a socket it no longer has, but first, after the server's close frame, the end.
            self.connected = False
            if self._told and not sending:
                self._told = False
                raise WebSocketConnectionClosedException("Connection to remote host was lost.")
            raise WebSocketConnectionClosedException("socket is already closed." if sending else "Connection is closed")
        op = submit(engine, socket)
        c = self._wait(op, keep)
        if c.error is not None:
            if c.kind == "closed":  # the connection's end: done with
                self.connected = False
                self._release()
            raise _exception(c, "send" if sending else "recv")
        return c

    def _wait(self, op: int, keep: bool = False) -> Completion:
        hub, engine, socket = self._hub, self._engine, self._socket
        assert hub is not None and engine is not None and socket is not None
        if getcurrent() is hub.main or getcurrent() is hub.driver:
            raise WebSocketException("a WebSocket of the engine waits in a user's greenlet, not here")

        def kept(c: Completion) -> None:
            if keep and c.error is None:
                self._unread.appendleft(c)  # a message taken already: the next receive returns it

        def abandoned(c: Completion | None) -> None:
            if c is not None:
                kept(c)
            elif _current_engine(hub) is engine:  # (a finished engine has nothing in progress)
                # Still in progress as far as the hub knows: ended in the engine, whose one completion
                # for it (cancelled, or the message it took before the cancel came) goes to `kept`.
                engine.ws_client_cancel(socket, op)
                hub.watch(op, kept)

        c: Completion = hub.wait_for(op, abandoned)
        return c


class _OnTheLibrary(WebSocket):
    """A `WebSocket` whose `connect` made websocket-client's own connection (module doc): its public
    attributes are that connection's."""

    def __getattribute__(self, name: str) -> Any:
        if name.startswith("_"):
            return object.__getattribute__(self, name)
        return getattr(object.__getattribute__(self, "_real"), name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name.startswith("_"):
            object.__setattr__(self, name, value)
        else:
            setattr(self._real, name, value)

    def __iter__(self) -> Iterator[str | bytes]:
        return iter(self._real)

    def __next__(self) -> str | bytes:
        message: str | bytes = next(self._real)
        return message


def _current_engine(hub: Hub | None) -> ScriptEngine | None:
    """The engine of the test in progress (a connection made in an earlier test is gone with its engine)."""
    return None if hub is None or hub.finished else hub.engine


def _handshake_headers(url: str, options: dict[str, Any]) -> list[tuple[str, str]]:
    """The handshake's headers as websocket-client writes them: Host (given), Origin, the subprotocols,
    the file's headers (a list of "Name: value" or a dict), the cookie."""
    out: list[tuple[str, str]] = []
    parts = urlsplit(url)
    if options.get("host"):
        out.append(("Host", str(options["host"])))
    if not options.get("suppress_origin"):
        if options.get("origin") is not None:
            out.append(("Origin", str(options["origin"])))
        else:
            hostport = parts.hostname or ""
            if ":" in hostport:
                hostport = f"[{hostport}]"
            if parts.port not in (None, 80, 443):
                hostport = f"{hostport}:{parts.port}"
            out.append(("Origin", f"{'https' if parts.scheme.lower() == 'wss' else 'http'}://{hostport}"))
    if options.get("subprotocols"):
        out.append(("Sec-WebSocket-Protocol", ",".join(options["subprotocols"])))
    header = options.get("header")
    if isinstance(header, dict):
        out += [(str(k), str(v)) for k, v in header.items() if v is not None]
    elif header:
        for line in header:
            name, _, value = str(line).partition(":")
            out.append((name.strip(), value.strip()))
    if options.get("cookie"):
        out.append(("Cookie", str(options["cookie"])))
    return out


def _exception(c: Completion, doing: str) -> Exception:
    """websocket-client's exception, in its words, for a failed operation (its kind, from the engine)."""
    kind, message = c.kind, c.error or ""
    if kind == "timeout":
        return WebSocketTimeoutException("Connection timed out")
    if kind == "connect_timeout":
        return TimeoutError("timed out")
    if kind == "closed":
        if _CLOSED_BY_SCRIPT in message or _STOPPED in message:
            return WebSocketConnectionClosedException(
                "socket is already closed." if doing == "send" else "Connection is closed"
            )
        return WebSocketConnectionClosedException("Connection to remote host was lost.")
    if kind == "connect_refused":
        return ConnectionRefusedError(111, "Connection refused")
    if kind == "reset":
        return ConnectionResetError(104, "Connection reset by peer")
    answered = re.search(r"answered the handshake with (\d+)", message) if kind == "websocket" else None
    if kind == "http" or answered:
        status = int(answered.group(1)) if answered else c.status
        phrase = HTTPStatus(status).phrase if status in HTTPStatus._value2member_map_ else ""
        return WebSocketBadStatusException(f"Handshake status {status} {phrase}".rstrip(), status, phrase or None)
    if kind in ("websocket", "too_large"):
        return WebSocketProtocolException(message)
    return WebSocketException(message)


def create_connection(url: str, timeout: float | None = None, class_: Any = None, **options: Any) -> Any:
    """Connects to `url` and returns the WebSocket, as websocket-client's `create_connection`: in the
    engine when it can make the connection (module doc), else websocket-client's own."""
    cls = class_ or WebSocket
    why = None if isinstance(cls, type) and issubclass(cls, WebSocket) else "a class_ of the file's own"
    why = why or _needs_library(url, options)
    if why is None and _engine_here() is None:
        why = "outside the users' greenlets"
    if why is not None:
        if _library is None:
            raise _library_needed(why)
        library_class = class_ or _library.WebSocket
        return _library.create_connection(url, timeout, class_=library_class, **options)
    made = {k: options.pop(k) for k in _CONSTRUCTOR if k in options}
    ws = cls(**made, **options)
    ws.settimeout(timeout if timeout is not None else getdefaulttimeout())
    ws.connect(url, **options)
    return ws


def __getattr__(name: str) -> Any:
    """The library's other names (enableTrace, its logging, ...): websocket-client's own."""
    if _library is not None and not name.startswith("__"):
        return getattr(_library, name)
    raise AttributeError(f"module 'websocket' has no attribute {name!r}")


def library_module() -> ModuleType | None:
    """websocket-client itself, if installed (the connections this module leaves to it)."""
    return _library

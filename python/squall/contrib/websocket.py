"""`WebSocketUser`: a user whose WebSocket lives in the engine. Each operation is one call into the
engine, which times it and records it in the run's statistics beside HTTP and MQTT users, with the
vocabulary of Locust's socket users:

| call | method | timed |
|---|---|---|
| `self.ws.connect(url)` | `WS` | the TCP connect, TLS, the handshake |
| `self.ws.exchange(message)` | `WSC` | from the send to the next message the server sends after it (the reply) |
| `self.ws.send(message)` | `WSS` | until the message is written |
| `self.ws.receive()` | `WSR` | from the call until a message is there (0 if one was waiting) |

Each is named by the URL's path unless `name=` says otherwise. Messages nobody asked for wait in the
user's inbox (up to 1,000; `receive` takes the oldest). A connection that broke opens again at the next
operation (its connect counted again); one the server closed between two operations (a close other than
1000, a reset) is a failure of its `WS` row. A failed operation is in the statistics already and raises
`WebSocketError`, which ends the task as Locust's `RescheduleTask` does (catch it to go on).

    class Chat(WebSocketUser):
        host = "ws://127.0.0.1:8000"          # or -H; http(s):// becomes ws(s)://

        def on_start(self):
            self.ws.connect("/chat", headers={"Authorization": "Bearer t0k3n"})

        @task
        def talk(self):
            reply = self.ws.exchange(json.dumps({"say": "hi"}), name="say")
            assert json.loads(reply)["ok"]
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from greenlet import getcurrent

from squall import _engine
from squall.exception import RescheduleTask
from squall.user.users import User

if TYPE_CHECKING:
    from squall._engine import Completion
    from squall.env import Environment

_SCHEMES = {"http": "ws", "https": "wss", "ws": "ws", "wss": "wss"}


def _as_http(url: str) -> str:
    """ws(s):// as http(s)://, for the one URL join (the engine's, which knows http and https)."""
    scheme, sep, rest = url.partition("://")
    return {"ws": "http", "wss": "https"}.get(scheme.lower(), scheme) + sep + rest if sep else url


class WebSocketError(RescheduleTask):
    """A WebSocket operation failed (its failure is in the statistics already): the task ends here and
    the user goes on with its next one, unless the task catches it."""


class WebSocketClient:
    """A user's WebSocket, run by the engine (`WebSocketUser.ws`)."""

    def __init__(self, user: User, timeout: float = 30.0) -> None:
        self._user = user
        self._hub = user.hub
        self.timeout = timeout

    def _url(self, url: str) -> str:
        """`url` on the user's host as an HttpUser's path is (Locust's join, as text), or a whole URL;
        http(s):// is taken as ws(s)://."""
        whole = url if "://" in url else _engine.joined_url(_as_http(self._user.host or ""), url)
        scheme = urlsplit(whole).scheme.lower()
        if scheme not in _SCHEMES:
            raise ValueError(f"a WebSocket URL is ws:// or wss:// (or http(s):// of the same host), not {whole!r}")
        return _SCHEMES[scheme] + whole[len(scheme) :]

    def _wait(self, op_id: int) -> Completion:
        if getcurrent() is self._hub.main:
            raise RuntimeError("a WebSocket operation waits for the engine: call it from a user's task")
        c: Completion = self._hub.wait_for(op_id)
        if c.error is not None:
            raise WebSocketError(c.error)
        return c

    @staticmethod
    def _payload(message: str | bytes | bytearray) -> tuple[bytes, bool]:
        if isinstance(message, str):
            return message.encode(), False
        return bytes(message), True

    @staticmethod
    def _message(c: Completion) -> str | bytes:
        return c.content if c.binary else c.content.decode()

    def connect(
        self,
        url: str = "",
        headers: dict[str, str] | None = None,
        name: str | None = None,
        timeout: float | None = None,
    ) -> None:
        """Opens the WebSocket (closing the one open): `url` a path on the user's host or a whole URL;
        `headers` for the handshake (Origin, Sec-WebSocket-Protocol, Authorization, Cookie ...)."""
        engine = self._hub.engine
        pairs = [(str(k), str(v)) for k, v in (headers or {}).items()]
        self._wait(engine.ws_connect(self._user.user_id, self._url(url), pairs, name, timeout or self.timeout))

    def send(self, message: str | bytes | bytearray, name: str | None = None) -> None:
        """Sends a message (text for a str, binary for bytes), without waiting for anything back."""
        payload, binary = self._payload(message)
        self._wait(self._hub.engine.ws_send(self._user.user_id, payload, binary, name))

    def exchange(
        self, message: str | bytes | bytearray, name: str | None = None, timeout: float | None = None
    ) -> str | bytes:
        """Sends a message and returns the reply: the next message the server sends after it."""
        payload, binary = self._payload(message)
        c = self._wait(self._hub.engine.ws_exchange(self._user.user_id, payload, binary, name, timeout or self.timeout))
        return self._message(c)

    def receive(self, name: str | None = None, timeout: float | None = None) -> str | bytes:
        """The next message: the oldest unread one, or the next to come within `timeout`."""
        c = self._wait(self._hub.engine.ws_receive(self._user.user_id, name, timeout or self.timeout))
        return self._message(c)

    def close(self) -> None:
        """Closes the WebSocket (close 1000); the next operation needs `connect` again."""
        self._wait(self._hub.engine.ws_close(self._user.user_id))


class WebSocketUser(User):
    """A user with a WebSocket in the engine: `self.ws` (also `self.client`). `host`: ws://, wss://, or
    the http(s):// of a server that serves both; `timeout`: seconds a connect, exchange or receive waits."""

    abstract = True
    host: str | None = None
    timeout = 30.0
    ws: WebSocketClient

    def __init__(self, environment: Environment) -> None:
        super().__init__(environment)
        self.ws = WebSocketClient(self, self.timeout)
        self.client: Any = self.ws

"""`locust.contrib.socketio` (Locust 2.39): `SocketIOUser`, whose `self.sio` is a python-socketio client
that fires `events.request` for what it does, with Locust's types and names: `WS connect` (timed),
`WSC EVENT` for a `call` (timed to its answer), `WSE EVENT` for an `emit` and `WSS NAME` for a `send`
(0 ms: they do not wait), `WSR EVENT` for each event received (the catch-all handler `on_message`).
python-socketio's client runs on threads and sockets, which gevent makes greenlets and cooperative
sockets under squall as under Locust, so users waiting on the server wait together; its WebSocket, after
Engine.IO's first polling requests, is the engine's (its transport is websocket-client, which `import
websocket` makes squall.contrib.websocket_client), read by the client's own greenlet while the user emits."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

import socketio

from squall.user.users import User

if TYPE_CHECKING:
    from squall.env import Environment
    from squall.event import EventHook


class SocketIOClient(socketio.Client):
    """`socketio.Client` whose calls are requests in the statistics."""

    def __init__(self, request_event: EventHook, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.request_event = request_event

    def connect(self, *args: Any, **kwargs: Any) -> None:
        with self.request_event.measure("WS", "connect"):
            super().connect(*args, **kwargs)

    def _fire_unwaited(self, request_type: str, name: str, data: Any, send: Callable[[], None]) -> None:
        exception = None
        try:
            send()
        except Exception as e:
            exception = e
        self.request_event.fire(
            request_type=request_type,
            name=name,
            response_time=0,
            response_length=len(data or []),
            exception=exception,
            context={},
        )

    def send(self, data: Any, namespace: str | None = None, callback: Any = None, name: str = "Unnamed") -> None:
        self._fire_unwaited("WSS", name, data, lambda: super(SocketIOClient, self).send(data, namespace, callback))

    def emit(self, event: str, data: Any = None, namespace: str | None = None, callback: Any = None) -> None:
        self._fire_unwaited(
            "WSE", str(event), data, lambda: super(SocketIOClient, self).emit(event, data, namespace, callback)
        )

    def call(self, event: str, data: Any = None, *args: Any, **kwargs: Any) -> Any:
        with self.request_event.measure("WSC", event):
            return super().call(event, data, *args, **kwargs)

    def on_message(self, event: str, data: Any) -> None:
        """The handler of every event received (`sio.on("*", ...)`): a `WSR` request of 0 ms, named by the
        event. Override it, or register handlers of your own with `self.sio.on(event, handler)`."""
        self.request_event.fire(
            request_type="WSR",
            name=event,
            response_time=0,
            response_length=len(data or []),
            exception=None,
            context={},
        )


class SocketIOUser(User):
    """A User with a Socket.IO client, `self.sio` (made with the class's `options`, socketio.Client's
    keywords); connect it in `on_start`. Its `wait` loop runs in a greenlet of its own, as in Locust."""

    abstract = True
    options: dict[str, Any] = {}  # noqa: RUF012 (Locust's class attribute, overridden by files)
    sio: SocketIOClient

    def __init__(self, environment: Environment) -> None:
        import gevent  # gevent's own, or squall's stand-in (squall.locust_compat)

        super().__init__(environment)
        self.sio = SocketIOClient(self.environment.events.request, **self.options)
        self.sio_greenlet = gevent.spawn(self.sio.wait)
        self.sio.on("*", self.sio.on_message)

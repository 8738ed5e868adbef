"""Users on websocket-client (`import websocket`) as Locust users write them, against
tests/servers/ws_server.py (the host: ws://127.0.0.1:PORT), one class a behaviour, picked on the command
line. Each call is reported as Locust users report theirs: one `events.request` with its time and any
exception. Under squall `websocket` is the engine's (squall.contrib.websocket_client), under Locust
websocket-client itself: the same file, run by both."""

import time

import gevent
import websocket
from locust import User, constant, task


def fire(user, kind, name, start, length=0, exception=None):
    user.environment.events.request.fire(
        request_type=kind, name=name, response_time=(time.perf_counter() - start) * 1000, response_length=length,
        exception=exception, context={},
    )  # fmt: skip


class Echo(User):
    """Two connections a user (header= as a dict and as a list), each exchange a send and its echo."""

    wait_time = constant(0)

    def on_start(self):
        self.a = websocket.create_connection(self.host + "/echo", timeout=10, header={"X-Conn": "a"})
        self.b = websocket.create_connection(self.host + "/echo", timeout=10, header=["X-Conn: b"])

    def on_stop(self):
        self.a.close()
        self.b.close()

    @task
    def echo(self):
        for ws, message in ((self.a, "hello a"), (self.b, b"\x00hello b")):
            start, error, reply = time.perf_counter(), None, ""
            try:
                if isinstance(message, bytes):
                    ws.send_binary(message)
                else:
                    ws.send(message)
                reply = ws.recv()
                if reply != message:
                    error = ValueError(f"the reply is not the message: {reply!r}")
            except Exception as e:
                error = e
            fire(self, "WS", "echo " + ("binary" if isinstance(message, bytes) else "text"), start, len(reply), error)


class Duplex(User):
    """A greenlet of the user's own reads every message (as python-socketio's Engine.IO client and
    locust-plugins' SocketIOUser do) while the task sends: under squall a send goes out while that
    receive waits, on the one connection."""

    wait_time = constant(0.005)

    def on_start(self):
        self.ws = websocket.create_connection(self.host + "/echo")
        self.reader = gevent.spawn(self.read)

    def read(self):
        while True:
            start = time.perf_counter()
            try:
                message = self.ws.recv()
            except websocket.WebSocketConnectionClosedException:
                return
            fire(self, "WSR", "echo", start, len(message))

    @task
    def send(self):
        start = time.perf_counter()
        self.ws.send("ping")
        fire(self, "WSS", "ping", start, 4)


class Silent(User):
    """A server that never answers: each receive times out (settimeout), raising WebSocketTimeoutException."""

    wait_time = constant(0)

    def on_start(self):
        self.ws = websocket.create_connection(self.host + "/silent", timeout=10)
        self.ws.settimeout(0.2)

    @task
    def wait(self):
        self.ws.send("anyone?")
        start, error = time.perf_counter(), None
        try:
            self.ws.recv()
        except Exception as e:
            error = e
        fire(self, "WSR", "silent", start, 0, error)


class Closer(User):
    """A server that closes after each message: recv returns "" for its close frame (`connected` False),
    and the next recv raises WebSocketConnectionClosedException; a send on a closed socket raises too."""

    wait_time = constant(0.01)

    @task
    def closed(self):
        ws = websocket.create_connection(self.host + "/close?after=1", timeout=10)
        ws.send("bye?")
        start = time.perf_counter()
        first = ws.recv()
        told = first == "" and not ws.connected
        fire(self, "WSR", "close frame", start, 0, None if told else AssertionError(f"{first!r}, {ws.connected}"))
        start, error = time.perf_counter(), None
        try:
            ws.recv()
        except Exception as e:
            error = e
        fire(self, "WSR", "after the close", start, 0, error)
        ws.close()


class Stuck(User):
    """Waits in recv, without a timeout, for a reply that never comes: the run must end on time anyway."""

    wait_time = constant(0)

    def on_start(self):
        self.ws = websocket.create_connection(self.host + "/silent")

    @task
    def wait(self):
        self.ws.send("anyone?")
        self.ws.recv()


class Backlog(User):
    """Reads nothing for a second while the server pushes 3,000 messages (/push?n=3000&ms=0), then reads
    them: all of them, in order (the engine's inbox holds 1,000; its reader waits for room past that, as
    a socket nobody reads, and drops nothing)."""

    wait_time = constant(60)

    @task
    def backlog(self):
        ws = websocket.create_connection(self.host + "/push?n=3000&ms=0", timeout=10)
        gevent.sleep(1)
        start, error = time.perf_counter(), None
        for i in range(3000):
            message = ws.recv()
            if message != f"push {i}":
                error = AssertionError(f"message {i} was {message!r}")
                break
        fire(self, "WSR", "3000 pushed", start, 3000, error)
        ws.close()

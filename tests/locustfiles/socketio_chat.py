"""A SocketIOUser (locust.contrib.socketio) as Locust's examples/socketio/socketio_ex.py writes one: it
connects in on_start, then each task `call`s the server's `wait` (answered after SIO_MS ms) and `emit`s a
`send_message` that the server echoes back as a `chat_message` event (a WSR request, by the catch-all
handler). The host is -H's: tests/servers/socketio_server.py."""

import os

from locust import constant, task
from locust.contrib.socketio import SocketIOUser

MS = int(os.environ.get("SIO_MS", "20"))


class Chatter(SocketIOUser):
    wait_time = constant(0.01)

    def on_start(self):
        self.sio.connect(self.host, wait_timeout=10)

    @task
    def chat(self):
        self.sio.call("wait", {"ms": MS})
        self.sio.emit("send_message", {"message": "bar"})

    def on_stop(self):
        self.sio.disconnect()

"""A Socket.IO user built the way locust-plugins' SocketIOUser was (locust_plugins/users/socketio.py, up to
locust-plugins 4; 5.0 dropped it for locust.contrib.socketio): one websocket-client connection per user
(`websocket.create_connection`), a greenlet of its own (`gevent.spawn`) that reads whatever the server
sends and reports each message as a `WSR` request, and a `send` that reports each message as `WSS`. It
speaks Engine.IO 4 by hand: the server's `0{...}` open, `40` to join the default namespace, `42[...]`
events, the server's `2` pings answered `3`. Its task emits `send_message`, which
tests/servers/socketio_server.py echoes back as a `chat_message` event. Like the plugin's users it never
closes its connection or stops its greenlet: the run's end does."""

import json

import gevent
import websocket
from locust import User, constant, task


class Chatter(User):
    wait_time = constant(0.01)

    def on_start(self):
        url = self.host.replace("http", "ws", 1) + "/socket.io/?EIO=4&transport=websocket"
        self.ws = websocket.create_connection(url)
        self.ws_greenlet = gevent.spawn(self.receive_loop)
        self.send("40", "40 connect")

    def receive_loop(self):
        while True:
            message = self.ws.recv()
            code = message[: 2 if message[:1] == "4" else 1]
            if code == "42":
                name = f"42 {json.loads(message[2:])[0]}"
            else:
                name = {"0": "0 open", "2": "2 ping", "40": "40 connected"}.get(code, f"{code} other")
            self.environment.events.request.fire(
                request_type="WSR", name=name, response_time=0, response_length=len(message), exception=None,
                context={},
            )  # fmt: skip
            if code == "2":
                self.send("3", "3 pong")

    def send(self, body, name):
        self.environment.events.request.fire(
            request_type="WSS", name=name, response_time=None, response_length=len(body), exception=None, context={}
        )
        self.ws.send(body)

    @task
    def chat(self):
        self.send(json.dumps(["send_message", {"message": "bar"}]).join(("42", "")), "42 send_message")

"""WebSocket users of squall's engine (squall.contrib.websocket) against tests/servers/ws_server.py:
WS_PATH picks the server's behaviour, WS_KIND the user's (exchanges, or receives of pushed messages)."""

import os
import time

from locust import constant, task

from squall.contrib.websocket import WebSocketUser

PATH = os.environ.get("WS_PATH", "/echo")


class Hoarder(WebSocketUser):
    """Takes a pushed message every 2 s, after the server pushed them all: the inbox keeps 1,000."""

    wait_time = constant(1)

    def on_start(self):
        self.ws.connect(PATH)

    @task
    def take(self):
        time.sleep(1.0)  # (cooperative: the pushes all arrive meanwhile, on a loaded host too)
        self.ws.receive(name="push")


class Pacer(WebSocketUser):
    """A message every 0.1 s: a close the server sends between two (/bye) comes while no call waits."""

    wait_time = constant(0.1)

    def on_start(self):
        self.ws.connect(PATH)

    @task
    def hello(self):
        assert self.ws.exchange("hello", name="hello") == "hello"


class Talker(WebSocketUser):
    wait_time = constant(0)
    timeout = float(os.environ.get("WS_TIMEOUT", "30"))

    def on_start(self):
        self.ws.connect(PATH)

    @task(3)
    def hello(self):
        reply = self.ws.exchange("hello", name="hello")
        assert reply == "hello", reply

    @task(1)
    def blob(self):
        reply = self.ws.exchange(b"\x00\xff" * 8, name="blob")
        assert reply == b"\x00\xff" * 8, reply


class Listener(WebSocketUser):
    """Takes what the server pushes (/push): each receive waits for the next message."""

    wait_time = constant(0)

    def on_start(self):
        self.ws.connect(PATH)
        self.seen = 0

    @task
    def listen(self):
        message = self.ws.receive(name="push")
        assert message == f"push {self.seen}", message
        self.seen += 1


class Duet(WebSocketUser):
    """A greenlet of the user's own receives every message while the task sends (/echo): each send goes
    out while that receive waits on the same connection."""

    wait_time = constant(0.005)

    def on_start(self):
        import gevent  # (only this class spawns)

        self.ws.connect(PATH)
        self.listener = gevent.spawn(self.listen)

    def listen(self):
        while True:
            assert self.ws.receive(name="echo") == "hi"

    @task
    def say(self):
        self.ws.send("hi", name="hi")

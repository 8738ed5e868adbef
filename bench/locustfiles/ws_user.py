"""squall's WebSocketUser, the scripted workload of bench/ws_bench.py beside Locust's ws_echo.py: each
user connects in on_start, then its task sends the message and waits for the reply (`exchange`: one
call into the engine, which times it), as fast as it can. A reply other than the message raises (an
exception in the result, counted by ws_bench as a failure).
The URL is the host (`-H ws://127.0.0.1:PORT/ws`), the message BENCH_MESSAGE. squall only (Locust has no
WebSocketUser)."""

import os

from locust import constant, task

from squall.contrib.websocket import WebSocketUser

MESSAGE = os.environ.get("BENCH_MESSAGE", "hello")


class Echo(WebSocketUser):
    wait_time = constant(0)

    def on_start(self):
        self.ws.connect("")

    @task
    def echo(self):
        reply = self.ws.exchange(MESSAGE, name="echo")
        if reply != MESSAGE:
            raise ValueError(f"the reply is not the message: {reply[:40]!r}")

"""Locust users on websocket-client, the Locust peer of bench/ws_bench.py: each user opens one connection
in on_start, then its task sends the message and reads the reply, as fast as it can, and reports the
exchange as Locust users do, one `events.request` with its time (a reply other than the message is a
failure). Locust's gevent patching makes websocket-client's socket cooperative. The URL is the host
(`--host ws://127.0.0.1:PORT/ws`), the message BENCH_MESSAGE."""

import os
import time

import websocket
from locust import User, constant, task

MESSAGE = os.environ.get("BENCH_MESSAGE", "hello")


class Echo(User):
    wait_time = constant(0)

    def on_start(self):
        self.ws = websocket.create_connection(self.host)

    def on_stop(self):
        self.ws.close()

    @task
    def echo(self):
        start = time.perf_counter()
        reply, error = "", None
        try:
            self.ws.send(MESSAGE)
            reply = self.ws.recv()
            if reply != MESSAGE:
                error = ValueError(f"the reply is not the message: {reply[:40]!r}")
        except Exception as e:  # a lost connection, a timeout: the exchange failed
            error = e
        self.environment.events.request.fire(
            request_type="WS",
            name="echo",
            response_time=(time.perf_counter() - start) * 1000,
            response_length=len(reply),
            exception=error,
            context={},
        )

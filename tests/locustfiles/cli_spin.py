"""A task that holds the interpreter: one request, then 30 s of Python that never yields (no request,
wait or sleep). The run must still end at -t and on SIGTERM, and write its outputs."""

import time

from locust import HttpUser, constant, task


class Spinner(HttpUser):
    wait_time = constant(0)

    @task
    def spin(self):
        self.client.get("/ok", name="before spin")
        until = time.monotonic() + 30
        while time.monotonic() < until:
            pass

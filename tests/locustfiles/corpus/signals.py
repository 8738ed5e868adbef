"""Requests until a signal stops the run; with SIGNALS_FAIL set, every other one fails (a 500)."""

import os

from locust import HttpUser, constant, task

FAIL = bool(os.environ.get("SIGNALS_FAIL"))


class U(HttpUser):
    wait_time = constant(0.1)

    @task
    def t(self):
        self.client.get("/ok")
        if FAIL:
            self.client.get("/status/500")

"""One request after another to HOSTILE_PATH (default /) of tests/servers/hostile_server.py, HOSTILE_WAIT
seconds apart (default 0): tests/test_hostile.py. With STOP_AFTER_REQUESTS the run ends after that many."""

import os

import stop_after  # noqa: F401  (ends the run after STOP_AFTER_REQUESTS requests)
from locust import HttpUser, constant, task

PATH = os.environ.get("HOSTILE_PATH", "/")


class Hostile(HttpUser):
    wait_time = constant(float(os.environ.get("HOSTILE_WAIT", "0")))

    @task
    def get(self):
        self.client.get(PATH)

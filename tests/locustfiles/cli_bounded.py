"""For comparing squall's output with Locust's: each user runs CLI_ITERATIONS iterations (a GET /ok that
succeeds, a GET /status/500 that fails) and stops, so the counts are exact; CLI_ITERATIONS=0 runs until
-t. The file logs one line of its own, which must go where Locust's logging sends it."""

import logging
import os

from locust import HttpUser, constant, events, task
from locust.exception import StopUser

ITERATIONS = int(os.environ.get("CLI_ITERATIONS", "0"))


@events.test_start.add_listener
def _started(environment, **_kw):
    logging.getLogger("cli_test").warning("from the locustfile")


class Bounded(HttpUser):
    wait_time = constant(0.05)

    def on_start(self):
        self.done = 0

    @task
    def go(self):
        if ITERATIONS and self.done == ITERATIONS:
            raise StopUser()
        self.done += 1
        self.client.get("/ok")
        self.client.get("/status/500")

"""Thresholds from Python: the run so far (in test_stopping, while it ends) and its result (quitting)."""

import json
import os

from locust import HttpUser, constant, events, task

seen = {}


class Steady(HttpUser):
    wait_time = constant(0.01)

    @task
    def index(self):
        self.client.get("/")


@events.test_stopping.add_listener
def _live(environment, **_kw):
    seen["live"] = [(v.threshold.text, v.passed) for v in environment.check_thresholds("p95<10s", "requests>=1")]


@events.quitting.add_listener
def _final(environment, **_kw):
    verdicts = environment.check_thresholds("p99.5<10s", "rps>1000000")
    seen["final"] = [(v.threshold.text, v.passed) for v in verdicts]
    if not all(v.passed for v in verdicts):
        environment.process_exit_code = 3
    with open(os.environ["SQUALL_TEST_OUT"], "w") as f:
        json.dump(seen, f)

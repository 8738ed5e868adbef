import json
import os
import time

from locust import HttpUser, constant, events, task

seen = {}


@events.test_start.add_listener
def started(environment, **kw):
    seen["test_start"] = time.monotonic()


@events.quitting.add_listener
def report(environment, **kw):
    with open(os.environ["SQUALL_TEST_OUT"], "w") as f:
        json.dump({"first_request_after_s": seen["first_request"] - seen["test_start"]}, f)


class Once(HttpUser):
    wait_time = constant(0.05)

    @task
    def go(self):
        seen.setdefault("first_request", time.monotonic())
        self.client.get("/ok")

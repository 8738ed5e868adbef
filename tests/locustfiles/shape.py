"""A LoadTestShape: 2 users, then 4, then the end."""

import json
import os

from locust import HttpUser, LoadTestShape, constant, events, task

peaks = []


class Steps(LoadTestShape):
    def tick(self):
        t = self.get_run_time()
        peaks.append(self.get_current_user_count())
        if t < 1.5:
            return 2, 10
        if t < 3:
            return 4, 10
        return None


@events.quitting.add_listener
def report(environment, **kw):
    with open(os.environ["SQUALL_TEST_OUT"], "w") as f:
        json.dump({"peaks": peaks}, f)


class Visitor(HttpUser):
    wait_time = constant(0.05)

    @task
    def visit(self):
        self.client.get("/ok")

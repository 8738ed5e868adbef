import json
import os
import time

import stop_after  # noqa: F401  (ends the run after a set number of requests)
from locust import HttpUser, constant, events, task

naps = []  # (user, start, end) of each cooperative sleep


@events.quitting.add_listener
def report(environment, **kw):
    with open(os.environ["SQUALL_TEST_OUT"], "w") as f:
        json.dump({"naps": naps}, f)


class Sleeper(HttpUser):
    wait_time = constant(0)

    @task
    def nap(self):
        start = time.monotonic()
        time.sleep(0.2)  # cooperative while squall runs the file: the other users go on
        naps.append((id(self), start, time.monotonic()))
        self.client.get("/ok", name="after nap")


class Spinner(HttpUser):
    wait_time = constant(0)
    fixed_count = 1

    @task
    def spin(self):
        self.client.get("/ok", name="before spin")
        while True:
            pass

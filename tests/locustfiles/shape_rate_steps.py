"""A LoadTestShape that returns rates (squall's open model): task iterations, one request each, start at
100 a second, then 200, then 300, a second each; then the end (tick() returns None at 3 s).

The shape notes each tick (its run time and what it returned) in the JSON file $SQUALL_TEST_OUT."""

import json
import os

from locust import FastHttpUser, LoadTestShape, constant, events, task

ticks = []


class Rates(LoadTestShape):
    def tick(self):
        t = self.get_run_time()
        tick = {"rate": 100 * (int(t) + 1)} if t < 3 else None
        ticks.append((t, tick))
        return tick


class Quick(FastHttpUser):
    wait_time = constant(1)  # not used by the open model

    @task
    def ok(self):
        self.client.get("/")


@events.quitting.add_listener
def report(environment, **kw):
    with open(os.environ["SQUALL_TEST_OUT"], "w") as f:
        json.dump({"ticks": ticks}, f)

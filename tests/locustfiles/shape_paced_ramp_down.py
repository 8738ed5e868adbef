"""A LoadTestShape that ramps down: 8 users for a second, then 2 at a spawn rate of 2 a second (Locust
stops users at the spawn rate, as it starts them), then the end at 4 s. Users as in
shape_paced_steps.py: 10 requests a second each, 50 ms off the instants the run changes.

The shape notes each tick (its run time and what it returned) in the JSON file $SQUALL_TEST_OUT."""

import json
import os
import time

from locust import FastHttpUser, LoadTestShape, constant_throughput, events, task

ticks = []


class Down(LoadTestShape):
    def tick(self):
        t = self.get_run_time()
        tick = (8, 100) if t < 1 else (2, 2) if t < 4 else None
        ticks.append((t, tick))
        return tick


class Paced(FastHttpUser):
    wait_time = constant_throughput(10)

    def on_start(self):
        time.sleep(0.05)  # cooperative in a squall task

    @task
    def index(self):
        self.client.get("/")


@events.quitting.add_listener
def report(environment, **kw):
    with open(os.environ["SQUALL_TEST_OUT"], "w") as f:
        json.dump({"ticks": ticks}, f)

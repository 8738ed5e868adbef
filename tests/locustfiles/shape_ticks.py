"""What the shape tests' locustfiles share (tests/test_shape_ground_truth.py): `ticks`, where a shape
notes each tick (its run time and what it returned), written to the JSON file $SQUALL_TEST_OUT at
quitting; and `Paced`, a user sending 10 requests a second (`constant_throughput(10)`), so that the
requests a server receives in a second are 10 x the users then running. Each user waits half a pacing
period (50 ms) before its first request: its requests then fall half-way between the instants the run
changes (ticks and spawns land on the driver's 100 ms turns, a few ms past whole seconds of the run),
so a request changes second only if some clock is 50 ms off."""

import json
import os
import time

from locust import FastHttpUser, constant_throughput, events, task

ticks = []


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

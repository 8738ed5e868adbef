"""A LoadTestShape whose users each send 10 requests a second (`constant_throughput(10)`), so the
requests a server receives in a second are 10 x the users then running: a ramp from 0 to 8 users at 2 a
second (4 s), a step up to 12 (2 s), a step down to 4 (2 s), then the end (tick() returns None at 8 s).

Each user waits half a pacing period (50 ms) before its first request: its requests then fall half-way
between the instants the run changes (ticks and spawns land on the driver's 100 ms turns, a few ms past
whole seconds of the run), so a request changes second only if some clock is 50 ms off.

The shape notes each tick (its run time and what it returned) in the JSON file $SQUALL_TEST_OUT."""

import json
import os
import time

from locust import FastHttpUser, LoadTestShape, constant_throughput, events, task

ticks = []


class Steps(LoadTestShape):
    def tick(self):
        t = self.get_run_time()
        if t < 4:
            tick = (8, 2)
        elif t < 6:
            tick = (12, 100)
        elif t < 8:
            tick = (4, 100)
        else:
            tick = None
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

"""A test_stop listener that reads the stats, as report plugins do: how long the read takes and what it
says are written to $STOP_READ_FILE."""

import json
import os
import time

from locust import HttpUser, constant, events, task


class Steady(HttpUser):
    wait_time = constant(0.01)

    @task
    def ok(self):
        self.client.get("/ok")


@events.test_stop.add_listener
def _read(environment, **_kw):
    t0 = time.monotonic()
    requests = environment.stats.total.num_requests
    took = time.monotonic() - t0
    with open(os.environ["STOP_READ_FILE"], "w") as f:
        json.dump({"requests": requests, "took": took}, f)

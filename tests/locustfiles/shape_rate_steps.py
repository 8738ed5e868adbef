"""A LoadTestShape that returns rates (squall's open model): task iterations, one request each, start at
100 a second, then 200, then 300, a second each; then the end (tick() returns None at 3 s).

Each tick is noted in `ticks` (shape_ticks.py)."""

from locust import FastHttpUser, LoadTestShape, constant, task
from shape_ticks import ticks


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

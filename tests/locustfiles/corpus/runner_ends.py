"""A task that ends the test with `environment.runner.quit()` or `.stop()` (RUNNER_END): as in Locust, the
calling user ends at the call (the rest of the task never runs; its on_stop does). After quit() the run
ends; after stop() Locust's headless run stays idle until -t."""

import os

from locust import HttpUser, constant, events, task

END = os.environ.get("RUNNER_END", "quit")


class Ender(HttpUser):
    wait_time = constant(0.1)

    def on_start(self):
        self.n = 0

    @task
    def work(self):
        self.n += 1
        self.client.get(f"/work/{self.n}")
        if self.n == 3:
            getattr(self.environment.runner, END)()
            self.client.get("/after")

    def on_stop(self):
        # (no request: after quit() Locust's process ends while one would be in flight)
        print("on_stop", self.n, flush=True)


@events.test_stop.add_listener
def _(environment, **_kw):
    print("test_stop", flush=True)  # (no request: Locust's stop() fires it in the calling user, soon killed)


@events.quitting.add_listener
def _(environment, **_kw):
    print("quitting", environment.stats.total.num_requests, flush=True)

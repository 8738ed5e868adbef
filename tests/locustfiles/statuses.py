"""One user asking tests/servers/odd_server.py for mixed answers: 200, 404, 503 and a response cut
mid-body (no status), under four names, until STOP_AFTER_REQUESTS (so that nothing is in flight at the
end and the server's counts per path are the run's)."""

import stop_after  # noqa: F401  (ends the run after a set number of requests)
from locust import HttpUser, constant, task


class Mixed(HttpUser):
    wait_time = constant(0.01)  # 400 requests: about 4 s, long enough for the time charts

    @task(6)
    def ok(self):
        self.client.get("/ok", name="ok")

    @task(2)
    def missing(self):
        self.client.get("/status/404", name="missing")

    @task(1)
    def unavailable(self):
        self.client.get("/status/503", name="unavailable")

    @task(1)
    def cut(self):
        self.client.get("/close-mid", name="cut")

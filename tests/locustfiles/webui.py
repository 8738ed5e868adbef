"""Locust's web-UI workflow on squall's dashboard (tests/test_web.py): a user class without a host, so
the page must give one; a request that fails with 500 (the failures in Locust's words) and a task that
raises (the exceptions CSV)."""

from locust import HttpUser, constant, task


class Steady(HttpUser):
    wait_time = constant(0.05)

    @task(3)
    def index(self):
        self.client.get("/")

    @task(1)
    def broken(self):
        self.client.get("/status/500")

    @task(1)
    def raises(self):
        raise ValueError("a task that breaks")

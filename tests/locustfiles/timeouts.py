"""Requests to a server that never answers: each ends at its timeout, a failure ("request timed out")."""

from locust import HttpUser, constant, task


class Waiting(HttpUser):
    wait_time = constant(0.05)

    @task
    def silent(self):
        r = self.client.get("/", timeout=0.3, name="silent")
        assert r.status_code == 0 and r.error == "request timed out", (r.status_code, r.error)

"""FastHttpUser's max_retries: what geventhttpclient sends again (an idempotent request whose connection
closed before any response) and what it does not (a POST); one request each in the stats."""

from _bounded import count
from locust import FastHttpUser, constant, task


class Retrying(FastHttpUser):
    wait_time = constant(0)
    max_retries = 2

    @task
    def both(self):
        count(self)
        self.client.get("/idempotent")
        self.client.post("/not-idempotent", data=b"x")

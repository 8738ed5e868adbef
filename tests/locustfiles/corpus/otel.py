"""Requests for --otel (tests/test_otel.py): two user classes, a success, a failure by status and one
judged in the block; each user runs ITERATIONS tasks with waits, so that the exporter sees the users
running."""

from _bounded import count
from locust import FastHttpUser, HttpUser, constant, task


class Reader(HttpUser):
    wait_time = constant(0.2)

    @task
    def read(self):
        count(self)
        self.client.get("/otel/read")
        self.client.get("/status/500", name="/otel/broken")


class Writer(FastHttpUser):
    wait_time = constant(0.2)

    @task
    def write(self):
        count(self)
        with self.client.post("/otel/write", json={"n": 1}, catch_response=True) as r:
            r.failure("judged")

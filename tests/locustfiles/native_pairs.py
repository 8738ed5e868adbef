"""A native task of two requests, the first slow: with --stop-timeout every task begun is finished."""

from locust import FastHttpUser, constant, task


class Pairs(FastHttpUser):
    wait_time = constant(0.05)

    @task
    def pair(self):
        self.client.get("/delay/300")
        self.client.get("/after")


class Slow(FastHttpUser):
    """Requests past their timeout (network_timeout): failures, as in Python."""

    network_timeout = 0.3
    wait_time = constant(0)

    @task
    def slow(self):
        self.client.get("/delay/1000")

"""A steady user for the dashboard's tests: one request every 50 ms."""

from locust import HttpUser, constant, task


class Steady(HttpUser):
    wait_time = constant(0.05)

    @task
    def index(self):
        self.client.get("/")

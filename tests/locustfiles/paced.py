"""Users that each send one request every 100 ms (10 a second) while the target keeps up."""

from locust import HttpUser, constant_pacing, task


class Paced(HttpUser):
    wait_time = constant_pacing(0.1)

    @task
    def index(self):
        self.client.get("/")

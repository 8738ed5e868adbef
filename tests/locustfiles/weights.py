import stop_after  # noqa: F401  (ends the run after a set number of requests)
from locust import HttpUser, constant, task


class Weighted(HttpUser):
    wait_time = constant(0)

    @task(3)
    def heavy(self):
        self.client.get("/ok?w=3", name="heavy")

    @task
    def light(self):
        self.client.get("/ok?w=1", name="light")

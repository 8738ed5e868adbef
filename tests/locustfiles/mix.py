import stop_after  # noqa: F401  (ends the run after a set number of requests)
from locust import HttpUser, TaskSet, between, task


class Reports(TaskSet):
    @task(3)
    def summary(self):
        self.client.get("/ok?r=summary", name="report summary")

    @task
    def detail(self):
        self.client.get("/ok?r=detail", name="report detail")
        self.interrupt()


class Shopper(HttpUser):
    wait_time = between(0.001, 0.005)
    tasks = {Reports: 2}

    @task(5)
    def browse(self):
        self.client.get("/ok?p=browse", name="browse")

    @task(3)
    def cart(self):
        self.client.post("/echo", json={"item": 1}, name="cart")

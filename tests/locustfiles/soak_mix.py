"""Mixed HTTP users for the soak test: several endpoints, bodies, a TaskSet, think time."""

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
    wait_time = between(0.2, 0.6)
    tasks = {Reports: 2}

    @task(5)
    def browse(self):
        self.client.get("/ok?p=browse", name="browse")

    @task(3)
    def cart(self):
        self.client.post("/echo", json={"item": 1, "note": "x" * 200}, name="cart")

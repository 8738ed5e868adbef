"""8 users for 2 s, then 2 until the run is stopped."""

from locust import HttpUser, LoadTestShape, constant, task


class Down(LoadTestShape):
    def tick(self):
        return (8, 100) if self.get_run_time() < 2 else (2, 100)


class Visitor(HttpUser):
    wait_time = constant(0.01)

    @task
    def visit(self):
        self.client.get("/ok")

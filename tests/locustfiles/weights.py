from locust import HttpUser, constant, task


class Weighted(HttpUser):
    wait_time = constant(0)

    @task(3)
    def heavy(self):
        self.client.get("/ok?w=3", name="heavy")

    @task
    def light(self):
        self.client.get("/ok?w=1", name="light")

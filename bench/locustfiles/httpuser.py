from locust import HttpUser, constant, task


class Bench(HttpUser):
    wait_time = constant(0)

    @task
    def index(self):
        self.client.get("/")

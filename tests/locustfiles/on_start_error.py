from locust import HttpUser, constant, task


class Fragile(HttpUser):
    wait_time = constant(0.01)

    def on_start(self):
        raise RuntimeError("login failed")

    @task
    def never(self):
        self.client.get("/ok")

from locust import FastHttpUser, constant, task


class Bench(FastHttpUser):
    wait_time = constant(0)

    @task
    def index(self):
        self.client.get("/")

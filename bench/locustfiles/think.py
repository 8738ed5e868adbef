from locust import FastHttpUser, between, task


class Thinking(FastHttpUser):
    wait_time = between(0.1, 0.2)

    @task
    def index(self):
        self.client.get("/")

"""Native users that think (between(0.05, 0.1)): one GET each task."""

from locust import FastHttpUser, between, task


class Thinking(FastHttpUser):
    wait_time = between(0.05, 0.1)

    @task
    def index(self):
        self.client.get("/")

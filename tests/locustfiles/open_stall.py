"""The open model's test file: one request per task against the odd server's stalling endpoint."""

from locust import FastHttpUser, constant, task


class Stalled(FastHttpUser):
    wait_time = constant(5)  # not used by the open model: each arrival runs one task

    @task
    def stall(self):
        self.client.get("/stall")

"""A shape that returns a rate (squall's open model): 100 iterations a second, then 300, then the end."""

from locust import FastHttpUser, LoadTestShape, constant, task


class Quick(FastHttpUser):
    wait_time = constant(1)

    @task
    def ok(self):
        self.client.get("/ok")


class Steps(LoadTestShape):
    def tick(self):
        t = self.get_run_time()
        if t < 2:
            return {"rate": 100}
        if t < 4:
            return {"rate": 300}
        return None

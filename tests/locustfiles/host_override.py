"""A class host that must not be loaded when -H names another (Locust's precedence: -H wins)."""

from locust import HttpUser, constant, task


class Production(HttpUser):
    host = "http://127.0.0.1:9"  # the discard port: nothing answers there
    wait_time = constant(0.05)

    @task
    def ok(self):
        assert self.host != Production.host, "the class's host was used"
        self.client.get("/ok")

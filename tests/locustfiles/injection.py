"""CR/LF in a header value or method must never reach the wire: each request is refused (ValueError)."""

from locust import HttpUser, constant, task


class Injecting(HttpUser):
    wait_time = constant(0.2)

    @task
    def header(self):
        self.client.get("/ok", headers={"X": "a\r\nEvil: injected"})

    @task
    def method(self):
        self.client.request("GET /ok HTTP/1.1\r\nEvil: x\r\n\r\nGET", "/ok")

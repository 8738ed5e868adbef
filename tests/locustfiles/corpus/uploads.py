"""Uploads as real locustfiles write them: files= with a file object, a (name, bytes, type) tuple and
form fields beside them; a form-encoded body; raw bytes with their own Content-Type."""

import io

from _bounded import count
from locust import HttpUser, constant, task


class Uploader(HttpUser):
    wait_time = constant(0)

    @task
    def upload(self):
        count(self)
        report = io.BytesIO(b"col1,col2\n1,2\n")
        report.name = "/tmp/report.csv"
        self.client.post(
            "/upload",
            files={"report": report, "avatar": ("me.png", b"\x89PNG-bytes", "image/png")},
            data={"title": "quarterly", "tags": ["a", "b"]},
        )
        self.client.post("/form", data={"q": "load test", "n": 3})
        self.client.post("/raw", data=b"\x00\x01binary", headers={"Content-Type": "application/octet-stream"})

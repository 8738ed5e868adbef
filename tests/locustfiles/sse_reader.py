"""One user reading Server-Sent Events from tests/servers/sse_server.py with requests' streaming calls
(`stream=True`, `iter_lines`), until STOP_AFTER_REQUESTS (a streamed request counts at its head: the
last one's stream is left in flight)."""

import stop_after  # noqa: F401  (ends the run after a set number of requests)
from locust import HttpUser, constant, task


class Reader(HttpUser):
    wait_time = constant(0)

    @task
    def read(self):
        r = self.client.get("/sse?events=5&ms=20&first=30", stream=True, name="sse")
        data = [line for line in r.iter_lines() if line.startswith(b"data:")]
        assert data == [b"data: event %d" % i for i in range(5)], data

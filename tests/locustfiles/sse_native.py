"""A native user (squall.user.native: a task of one request with fixed arguments, run in the engine)
reading tests/servers/sse_server.py's stalled stream without stream=True: 2 events, then nothing, until
the request's timeout (0.3 s) ends it. For tests/test_sse_scripts.py, beside the same call in Python."""

from locust import HttpUser, constant, task


class StallReader(HttpUser):
    wait_time = constant(0)

    @task
    def stall(self):
        self.client.get("/stall?events=2", name="native_stall", timeout=0.3)

"""HTTP/2 from scripted users (run with --http2): plain requests, a body, headers and cookies both ways
(the response's headers are the h2 crate's decoded list, handed over as pairs)."""

import stop_after  # noqa: F401  (ends the run after STOP_AFTER_REQUESTS requests)
from locust import FastHttpUser, constant, task


class H2(FastHttpUser):
    wait_time = constant(0)

    def on_start(self):
        self.client.cookies["session"] = "h2"

    @task(3)
    def index(self):
        r = self.client.get("/")
        assert r.status_code == 200 and r.text == "hello\n", (r.status_code, r.text)

    @task
    def echo(self):
        with self.client.post("/echo", data=b"x" * 1000, name="echo", catch_response=True) as r:
            if r.text != "POST 1000\n":
                r.failure(f"echo said {r.text!r}")
            if r.headers.get("content-type") is None:
                r.failure("no content-type header")

    @task
    def cookies(self):
        r = self.client.get("/cookies", name="cookies")
        assert r.cookies == {"a": "1", "b": "2"}, r.cookies
        assert r.headers["Set-Cookie"] == "a=1; Path=/, b=2", r.headers  # repeated headers joined, as requests
        assert self.client.cookies.get_dict()["a"] == "1"

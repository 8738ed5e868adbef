"""The requests-session set-up real locustfiles do in on_start: log in, keep the token in the session's
headers, basic auth and default query parameters on the session, the session's cookie jar, verify off,
per-call headers overriding the session's whatever their case, a header removed with None, a header
given as bytes."""

from _bounded import count
from locust import HttpUser, constant, task


class ApiUser(HttpUser):
    wait_time = constant(0)

    def on_start(self):
        r = self.client.post("/login", data={"user": "alice", "password": "s3cret"})
        token = r.json()["token"]
        self.client.headers.update({"Authorization": f"Bearer {token}", "X-Client": "corpus"})
        self.client.params = {"tenant": "acme"}
        self.client.verify = False
        self.client.cookies.set("theme", "dark")
        assert self.client.cookies.get("session") == "s3ss10n", dict(self.client.cookies)

    @task
    def items(self):
        count(self)
        self.client.get("/items", params={"page": 2})
        self.client.get("/items/1", headers={"authorization": "Bearer override", "X-Client": None})
        self.client.put("/items/1", json={"name": "x"}, auth=("bob", "pw"))
        self.client.delete("/items/1", name="/items/[id]")
        # The same overrides without the session's params (squall merges them in its engine then), and a
        # header given as bytes.
        self.client.params = {}
        self.client.get("/plain", headers={"authorization": "Bearer override", "X-Client": None})
        self.client.get("/plain", headers={"x-client": b"bytes", "Accept": "application/json"})
        self.client.params = {"tenant": "acme"}

"""The requests-session set-up real locustfiles do in on_start: log in, keep the token in the session's
headers, basic auth and default query parameters on the session, the session's cookie jar, verify off,
per-call headers overriding the session's whatever their case, a header removed with None, a header
given as bytes; query parameters and form fields as requests merges and encodes them."""

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
        # A call's params over the session's, None removing one and dropped from a list, a list a pair
        # each, text as UTF-8, a float as str writes it; a list of pairs taken alone; form fields alike.
        self.client.get("/q", params={"tenant": "other", "page": None, "tags": ["a b", None, "caf\u00e9"], "n": 1.5})
        self.client.get("/q?x=1", params=[("k", "v&w"), ("gone", None)])
        self.client.get("/plain", params={"tenant": None})
        self.client.post("/form", data={"a": None, "b": ["1", "2"], "c": "x&y"})

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
        self.client.get("/plain", name="")  # an empty name: the request's path, as with none
        self.client.params = {"tenant": "acme"}
        self.client.get("/items/2", name="")  # (the same where the session's params need preparing)

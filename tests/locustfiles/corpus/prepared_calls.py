"""The same call made again while the session changes between the calls (squall keeps a call it has
seen prepared, issue 27): a header added, replaced in another case and removed in place, the session's
params filled in place and emptied, auth set and taken off, the base URL changed and put back, a
rename_request block, the headers replaced by a plain dict and then changed in it. Every request must
carry what the session says at the time it is made, as with Locust."""

from _bounded import count
from locust import HttpUser, constant, task


class Prepared(HttpUser):
    wait_time = constant(0)

    @task
    def calls(self):
        count(self)
        c = self.client
        c.get("/same")
        c.headers["X-Client"] = "one"
        c.get("/same")
        c.headers["x-client"] = "two"
        c.get("/same")
        del c.headers["X-Client"]
        c.get("/same")
        c.params["tenant"] = "acme"
        c.get("/same")
        c.params.clear()
        c.auth = ("bob", "pw")
        c.get("/same")
        c.auth = None
        c.get("/same")
        base = c.base_url
        c.base_url = base + "/v2"
        c.get("/same")
        c.base_url = base
        with c.rename_request("/renamed"):
            c.get("/same")
        c.get("/same")
        c.headers = {"X-Api-Version": "3"}
        c.get("/same")
        c.headers["X-Api-Version"] = "4"
        c.get("/same")
        with c.get("/same", catch_response=True) as r:
            r.success()

"""FastHttpUser's own API: default_headers, rest() with resp.js and an assertion that fails the
request, rest_() with its cache-busting parameter, a body that is not JSON, insecure and timeouts."""

from _bounded import count
from locust import FastHttpUser, constant, task


class RestUser(FastHttpUser):
    wait_time = constant(0)
    default_headers = {"X-Api-Version": "2"}
    network_timeout = 5.0
    connection_timeout = 5.0
    concurrency = 4
    insecure = True
    max_redirects = 3

    @task
    def api(self):
        count(self)
        with self.rest("POST", "/orders", json={"sku": "A1"}) as resp:
            assert resp.js["ok"] is True
            assert resp.js["path"] == "/orders"
        with self.rest("GET", "/orders/7") as resp:
            assert resp.js["method"] == "POST", "wrong method,"
        with self.rest("GET", "/text") as resp:
            pass
        with self.rest_("GET", "/search?q=x") as resp:
            pass
        self.client.get("/redirect/landing")
        self.client.get("/status/404")

"""The redirects' responses as a script reads them (`response.history`), posted back to the server so
that what each tool's script saw is compared: two hops (a 302, then a 303) before the landing, and a
request not redirected. Both clients keep each hop's status and Location; requests (HttpUser) also its
URL, the method of the request it answered, `is_redirect` and its body. Not caught (`catch_response`):
Locust's FastHttpUser context manager does not carry geventhttpclient's history over."""

from _bounded import count
from locust import FastHttpUser, HttpUser, constant, task


def hops(self, kind, read):
    """The two hops' responses, each as `read` gives it, and the request not redirected, posted back."""
    count(self)
    r = self.client.post("/redirect/redirect303/landed", json={"item": 1})
    seen = [read(h) for h in r.history]
    direct = self.client.get("/landed")
    self.client.post(f"/seen/{kind}", json={"history": seen, "final": r.url, "direct": len(direct.history)})


class Requests(HttpUser):
    wait_time = constant(0)

    @task
    def t(self):
        hops(
            self,
            "requests",
            lambda h: [h.status_code, h.url, h.headers.get("Location"), h.request.method, h.is_redirect, h.text],
        )


class Fast(FastHttpUser):
    wait_time = constant(0)

    @task
    def t(self):
        hops(self, "fast", lambda h: [h.status_code, h.headers.get("Location")])

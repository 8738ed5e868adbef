"""`response.url` as a script reads it, posted back to the server so that what each tool's script saw
is compared: a call with `params=` (requests puts them in the URL; geventhttpclient's request keeps the
URL it was given, the query made apart), a query written in the URL, a redirect with `params=` (the
final URL, for both), and a whole URL with `params=`."""

from _bounded import count
from locust import FastHttpUser, HttpUser, constant, task


def urls(self, kind):
    count(self)
    client = self.client
    seen = [
        client.get("/items", params={"page": 2, "q": "a b"}).url,
        client.get("/items?page=3").url,
        client.get("/items?page=4", params={"q": "c"}).url,
        client.get("/redirect/landed", params={"from": "x"}).url,
        client.get(f"{self.host}/items/5", params={"page": 5}).url,
    ]
    host = self.host
    client.post(f"/seen/{kind}", json=[u.replace(host, "HOST") if u else u for u in seen])


class Requests(HttpUser):
    wait_time = constant(0)

    @task
    def t(self):
        urls(self, "requests")


class Fast(FastHttpUser):
    wait_time = constant(0)

    @task
    def t(self):
        urls(self, "fast")

"""Requests redirected, as both clients follow them: a 302 or 303 turns a POST or PUT into a GET and
drops its body and the headers that described it (its Content-Type too), a HEAD stays a HEAD, a 301
turns a POST into a GET, a 307 keeps the method and the body. Every hop must arrive as Locust sends it,
and the request event tells the URL requested (`seen`)."""

import urllib.parse
import urllib.request

from _bounded import count
from locust import FastHttpUser, HttpUser, constant, events


@events.request.add_listener
def seen(request_type, name, url, **_kw):
    """The request event's URL, told to the server (not through the client: no event of its own): the
    URL requested, before its redirects, in both of Locust's clients."""
    host = urllib.parse.urlsplit(url)
    query = urllib.parse.urlencode({"type": request_type, "name": name, "url": host.path})
    urllib.request.urlopen(f"{host.scheme}://{host.netloc}/seen?{query}").read()


def hops(self):
    count(self)
    client = self.client
    client.post("/redirect/landed", json={"item": 1}, name="post 302")
    client.put("/redirect/put-landed", json={"item": 2}, name="put 302")
    client.post("/redirect303/seen-other", data="a=1", headers={"Content-Type": "application/x-www-form-urlencoded"})
    client.head("/redirect303/head-landed", name="head 303")
    client.post("/redirect301/moved", json={"item": 3}, name="post 301")
    client.post("/redirect307/kept", json={"item": 4}, name="post 307")


class Requests(HttpUser):
    wait_time = constant(0)
    tasks = [hops]


class Fast(FastHttpUser):
    wait_time = constant(0)
    tasks = [hops]

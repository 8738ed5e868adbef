"""Requests redirected, as both clients follow them: a 302 or 303 turns a POST or PUT into a GET and
drops its body and the headers that described it (its Content-Type too), a HEAD stays a HEAD, a 301
turns a POST into a GET, a 307 keeps the method and the body. Every hop must arrive as Locust sends it."""

from _bounded import count
from locust import FastHttpUser, HttpUser, constant


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

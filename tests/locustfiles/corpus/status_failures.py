"""Statuses the client judges itself, for each of Locust's clients (one class a run, named at the end):
HttpUser records requests' HTTPError('500 Server Error: ...'), FastHttpUser geventhttpclient's
LocustBadStatusCode(code=500)."""

from _bounded import count
from locust import HttpUser, constant, task
from locust.contrib.fasthttp import FastHttpUser


class RequestsStatus(HttpUser):
    wait_time = constant(0.01)

    @task
    def statuses(self):
        count(self)
        self.client.get("/status/500")
        self.client.get("/status/404", name="missing")
        self.client.get("/ok")


class FastStatus(FastHttpUser):
    wait_time = constant(0.01)

    @task
    def statuses(self):
        count(self)
        self.client.get("/status/500")
        self.client.get("/status/404", name="missing")
        self.client.get("/ok")

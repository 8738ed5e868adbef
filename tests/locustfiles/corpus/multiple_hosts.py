"""A second host in the same user (what Locust's multiple_hosts.py does): a session made with Locust's
keywords (`base_url=`, `request_event=self.client.request_event`, `user=self`) beside `self.client`, with
cookies of its own; the same with FastHttpSession; and a session made without a user in a `test_start`
listener. API_HOST is the recorder under another path."""

import os

from _bounded import count
from locust import FastHttpUser, HttpUser, SequentialTaskSet, constant, events, task
from locust.clients import HttpSession
from locust.contrib.fasthttp import FastHttpSession


@events.test_start.add_listener
def warm_up(environment, **_kw):
    once = HttpSession(base_url=environment.host, request_event=environment.events.request, user=None)
    once.get("/setup", name="setup")


class Journey(SequentialTaskSet):
    @task
    def sign_in(self):
        count(self)
        self.user.client.get("/login")  # a cookie for the user's own session only

    @task
    def front(self):
        count(self)
        self.user.client.get("/")

    @task
    def other_host(self):
        count(self)
        self.user.api.get("/stats/requests")


class TwoHosts(HttpUser):
    wait_time = constant(0)
    tasks = [Journey]

    def __init__(self, environment):
        super().__init__(environment)
        self.api = HttpSession(base_url=os.environ["API_HOST"], request_event=self.client.request_event, user=self)


class FastTwoHosts(FastHttpUser):
    wait_time = constant(0)
    tasks = [Journey]

    def __init__(self, environment):
        super().__init__(environment)
        base = os.environ["API_HOST"] + "/fast"
        self.api = FastHttpSession(base_url=base, request_event=self.client.request_event, user=self)

"""Locust's multiple_hosts.py: a second HttpSession for another host, made with Locust's keywords
(`base_url=`, `request_event=self.client.request_event`, `user=self`), with its own cookie jar; the
same with FastHttpSession; and a session made without a user in a `test_start` listener. API_HOST is
the recorder under another path."""

import os

from _bounded import count
from locust import FastHttpUser, HttpUser, SequentialTaskSet, constant, events, task
from locust.clients import HttpSession
from locust.contrib.fasthttp import FastHttpSession


@events.test_start.add_listener
def set_up(environment, **_kw):
    setup = HttpSession(base_url=environment.host, request_event=environment.events.request, user=None)
    setup.get("/setup", name="setup")


class Steps(SequentialTaskSet):
    @task
    def login(self):
        count(self)
        self.user.client.get("/login")  # sets a cookie on the user's own session only

    @task
    def index(self):
        count(self)
        self.user.client.get("/")

    @task
    def index_other_host(self):
        count(self)
        self.user.api_client.get("/stats/requests")


class MultipleHostsUser(HttpUser):
    abstract = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.api_client = HttpSession(
            base_url=os.environ["API_HOST"], request_event=self.client.request_event, user=self
        )


class WebsiteUser(MultipleHostsUser):
    wait_time = constant(0)
    tasks = [Steps]


class FastMultipleHostsUser(FastHttpUser):
    wait_time = constant(0)
    tasks = [Steps]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.api_client = FastHttpSession(
            base_url=os.environ["API_HOST"] + "/fast", request_event=self.client.request_event, user=self
        )

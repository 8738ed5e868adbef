"""Locust's x-forwarded-for.py: ForwardedForUser is a base class that its author forgot to mark
abstract, so it is a User class with no tasks. Locust warns, starts it all the same, and each of its
users' turns is an exception; WebsiteUser runs as usual, with its X-Forwarded-For header."""

import random

from _bounded import count
from locust import HttpUser, constant, events, task


class ForwardedForUser(HttpUser):
    subnet = "10.10."

    def __init__(self, environment):
        super().__init__(environment)
        self.fake_ip = self.subnet + str(random.randint(0, 254)) + "." + str(random.randint(0, 254))
        self.client.headers["X-Forwarded-For"] = self.fake_ip


class WebsiteUser(ForwardedForUser):
    wait_time = constant(0.05)

    def on_start(self):
        self.client.get(f"/target/{WebsiteUser.target}")

    @task
    def index(self):
        count(self)
        with self.client.get("/", catch_response=True):
            pass


@events.test_start.add_listener
def started(environment, **_kw):
    # What test_start sees: Locust's runner has its target (the users asked for) by then.
    WebsiteUser.target = environment.runner.target_user_count

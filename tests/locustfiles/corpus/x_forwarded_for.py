"""A base class its author forgot to mark abstract (the situation of Locust's x-forwarded-for.py): Spoofed
sets an X-Forwarded-For header for its subclasses and has no task of its own, so it is a User class
without tasks. Locust warns, starts it all the same, and each turn of its users is an exception; Site
runs as usual, its header sent."""

import random

from _bounded import count
from locust import HttpUser, constant, events, task


class Spoofed(HttpUser):
    network = "10.10."

    def __init__(self, environment):
        super().__init__(environment)
        address = f"{self.network}{random.randint(0, 254)}.{random.randint(0, 254)}"
        self.client.headers["X-Forwarded-For"] = address


class Site(Spoofed):
    wait_time = constant(0.05)

    def on_start(self):
        self.client.get(f"/target/{Site.target}")

    @task
    def home(self):
        count(self)
        with self.client.get("/", catch_response=True):
            pass


@events.test_start.add_listener
def started(environment, **_kw):
    # What test_start sees: Locust's runner has its target (the users asked for) by then.
    Site.target = environment.runner.target_user_count

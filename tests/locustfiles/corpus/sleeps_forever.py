"""Users that wait for ever after their first task, beside one that works (issue 41): Locust's idiom for
a user that only does its on_start (`constant(float("inf"))`), a random wait without an upper bound, and a
finite wait no run outlasts (1e30 s: too long for the engine's timers, whose plan it would otherwise
qualify for). gevent sleeps them until the test ends; the run stops at -t, exit code 0, no exception."""

from _bounded import count
from locust import HttpUser, between, constant, task


class OnStartOnly(HttpUser):
    wait_time = constant(float("inf"))

    def on_start(self):
        self.client.get("/forever/on_start")

    @task
    def once(self):
        self.client.get("/forever/task")


class Unbounded(HttpUser):
    wait_time = between(1, float("inf"))

    @task
    def once(self):
        self.client.get("/unbounded")


class Eons(HttpUser):
    wait_time = constant(1e30)

    @task
    def once(self):
        self.client.get("/eons")  # requests only: a native plan's, but for its wait


class Site(HttpUser):
    wait_time = constant(0.05)

    @task
    def home(self):
        count(self)
        self.client.get("/site")

"""Requests under 2,000 names (one endpoint each in the stats): a result that takes a moment to build and
write, for the tests of what a second Ctrl-C during the writing does."""

import itertools

from locust import FastHttpUser, constant, task

NAMES = itertools.cycle(range(2000))


class ManyNames(FastHttpUser):
    wait_time = constant(0)

    @task
    def named(self):
        self.client.get("/", name=f"/name/{next(NAMES)}")

"""Native users whose sessions differ per user (on_start sets a header of the user's own): users of one
class share a plan only where their sessions are set alike (squall.user.native._plan_key)."""

import itertools

from locust import HttpUser, constant, task

numbers = itertools.count()


class Mine(HttpUser):
    wait_time = constant(0.05)

    def on_start(self):
        self.client.headers["X-User"] = f"u{next(numbers)}"

    @task
    def mine(self):
        self.client.get("/mine")

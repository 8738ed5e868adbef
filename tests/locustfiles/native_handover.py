"""A native user's connection is the one its script's requests use: on_start's request opens it (in
Python), the native task's requests go on it, and the plan's end hands it back for on_stop's request
(squall/user/native.py, the engine's NativeUser::conn)."""

import itertools

from locust import HttpUser, constant, task

numbers = itertools.count()


class Handover(HttpUser):
    wait_time = constant(0.05)

    def on_start(self):
        self.client.headers["X-User"] = f"u{next(numbers)}"
        self.client.get("/hello")

    @task
    def mine(self):
        self.client.get("/mine")

    def on_stop(self):
        self.client.get("/bye")

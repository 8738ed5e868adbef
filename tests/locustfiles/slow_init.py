"""Users slow to make (Locust's examples/custom_shape/wait_user_count.py: "a slow initialization for
gathering data"): each User's __init__ sleeps SLOW_INIT seconds, then the user requests every 50 ms."""

import os
import time

from locust import HttpUser, constant, task

SLOW = float(os.environ.get("SLOW_INIT", "0.5"))


class Slow(HttpUser):
    wait_time = constant(0.05)

    def __init__(self, *args, **kwargs):
        time.sleep(SLOW)
        super().__init__(*args, **kwargs)

    @task
    def index(self):
        self.client.get("/")

"""Locust's percentile settings, patched by the file as Locust's documentation shows: the console's
table and the CSV files (stats, history) report 25%, 50%, 75% and 100% instead of Locust's 11. One user
makes 20 requests under one name, alternately to the host (tests/servers/delay_server.py answering
after 20 ms) and to $SLOW_URL (after 60 ms), then stops: the 25th percentile is a fast one, the 75th a
slow one."""

import os

import locust.stats
from locust import HttpUser, task
from locust.exception import StopUser

locust.stats.PERCENTILES_TO_REPORT = [0.25, 0.5, 0.75, 1.0]


class Delays(HttpUser):
    @task
    def t(self):
        for _ in range(10):
            self.client.get("/", name="/delay")
            self.client.get(os.environ["SLOW_URL"], name="/delay")
        raise StopUser()

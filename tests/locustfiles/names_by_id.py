"""Each request named after its id, as a first draft does (`name=f"/item/{id}"`): NAMES_BY_ID names
(default 1,500), each asked NAMES_BY_ID_TIMES times (default 2) in all, by users that stop once every
id is taken, so that the counts are exact (tests/test_many_names.py)."""

import itertools
import os

from locust import HttpUser, constant, task
from locust.exception import StopUser

NAMES = int(os.environ.get("NAMES_BY_ID", "1500"))
TIMES = int(os.environ.get("NAMES_BY_ID_TIMES", "2"))
TAKEN = itertools.count()


class ById(HttpUser):
    wait_time = constant(0)

    @task
    def item(self):
        n = next(TAKEN)
        if n >= NAMES * TIMES:
            raise StopUser()
        i = n % NAMES
        self.client.get(f"/item/{i}", name=f"/item/{i}")

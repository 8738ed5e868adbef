import json
import os
from collections import Counter

from locust import HttpUser, constant, events, task

started = Counter()


@events.quitting.add_listener
def report(environment, **kw):
    with open(os.environ["SQUALL_TEST_OUT"], "w") as f:
        json.dump(started, f)


class Base(HttpUser):
    abstract = True
    wait_time = constant(0.05)

    def on_start(self):
        started[type(self).__name__] += 1

    @task
    def go(self):
        self.client.get("/ok", name=type(self).__name__)


class Heavy(Base):
    weight = 3


class Light(Base):
    weight = 1


class Admin(Base):
    fixed_count = 1

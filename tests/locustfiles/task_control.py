"""Locust's task control, exercised: RescheduleTaskImmediately (the next task at once, no wait),
InterruptTaskSet (back to the user from a nested TaskSet), the user_error event."""

import json
import os

from locust import HttpUser, TaskSet, constant, events, task
from locust.exception import InterruptTaskSet, RescheduleTaskImmediately

counts = {"nested": 0, "resched": 0, "user_errors": 0}


class Nested(TaskSet):
    @task
    def inner(self):
        self.client.get("/nested")
        counts["nested"] += 1
        raise InterruptTaskSet(reschedule=False)


class Controlled(HttpUser):
    wait_time = constant(0.2)
    tasks = {Nested: 1}

    @task
    def resched(self):
        self.client.get("/resched")
        counts["resched"] += 1
        raise RescheduleTaskImmediately()

    @task
    def boom(self):
        raise ValueError("boom")


@events.user_error.add_listener
def _error(user_instance, exception, tb, **_kw):
    counts["user_errors"] += 1


@events.quitting.add_listener
def _done(environment, **_kw):
    with open(os.environ["SQUALL_TEST_OUT"], "w") as f:
        json.dump(counts, f)

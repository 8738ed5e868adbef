"""Locust's task control, exercised: RescheduleTaskImmediately (the next task at once, no wait),
InterruptTaskSet (back to the user from a nested TaskSet), the user_error event. Each task that
follows a user's task notes how long after that task's end it began (`after_ms`, by what ended it)."""

import json
import os
import time

from locust import HttpUser, TaskSet, constant, events, task
from locust.exception import InterruptTaskSet, RescheduleTaskImmediately

counts = {"nested": 0, "resched": 0, "user_errors": 0, "after_ms": {"resched": [], "other": []}}


def begun(user):
    """A task of `user` begins: how long after its last task ended, noted by how that one ended."""
    last = getattr(user, "ended", None)
    if last is not None:
        counts["after_ms"][last[1]].append((time.monotonic() - last[0]) * 1000)


def ended(user, how):
    user.ended = (time.monotonic(), how)


class Nested(TaskSet):
    @task
    def inner(self):
        begun(self.user)
        self.client.get("/nested")
        counts["nested"] += 1
        ended(self.user, "other")
        raise InterruptTaskSet(reschedule=False)


class Controlled(HttpUser):
    wait_time = constant(0.2)
    tasks = {Nested: 1}

    @task
    def resched(self):
        begun(self)
        self.client.get("/resched")
        counts["resched"] += 1
        ended(self, "resched")
        raise RescheduleTaskImmediately()

    @task
    def boom(self):
        begun(self)
        ended(self, "other")
        raise ValueError("boom")


@events.user_error.add_listener
def _error(user_instance, exception, tb, **_kw):
    counts["user_errors"] += 1


@events.quitting.add_listener
def _done(environment, **_kw):
    with open(os.environ["SQUALL_TEST_OUT"], "w") as f:
        json.dump(counts, f)

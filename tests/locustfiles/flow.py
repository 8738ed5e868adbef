"""TaskSets, interrupts, exceptions and events; writes what happened to $SQUALL_TEST_OUT at quitting."""

import json
import os
from collections import Counter

from locust import HttpUser, SequentialTaskSet, TaskSet, constant, events, task
from locust.exception import RescheduleTask

seen = Counter()
order = {}  # user id -> the steps it ran


@events.init.add_listener
def on_init(environment, runner, **kw):
    seen["init"] += 1


@events.test_start.add_listener
def on_test_start(environment, **kw):
    seen["test_start"] += 1


@events.request.add_listener
def on_request(request_type, name, response_time, response_length, response, context, exception, start_time, url, **kw):
    seen["request"] += 1
    seen["request_failed"] += exception is not None


@events.test_stop.add_listener
def on_test_stop(environment, **kw):
    seen["test_stop"] += 1


@events.quitting.add_listener
def on_quitting(environment, **kw):
    seen["quitting"] += 1
    with open(os.environ["SQUALL_TEST_OUT"], "w") as f:
        json.dump({"seen": seen, "order": [steps[:6] for steps in order.values()]}, f)


class Steps(SequentialTaskSet):
    def on_start(self):
        seen["steps_start"] += 1

    @task
    def one(self):
        order.setdefault(self.user.user_id, []).append(1)
        self.client.get("/ok", name="step")

    @task
    def two(self):
        order.setdefault(self.user.user_id, []).append(2)

    @task
    def three(self):
        order.setdefault(self.user.user_id, []).append(3)
        self.interrupt()  # back to the user's own tasks

    def on_stop(self):
        seen["steps_stop"] += 1


class Inner(TaskSet):
    @task
    def leave(self):
        seen["inner"] += 1
        self.interrupt(reschedule=False)


class Flow(HttpUser):
    wait_time = constant(0.01)
    tasks = {Steps: 1, Inner: 1}

    def on_start(self):
        seen["user_start"] += 1

    @task
    def reschedule(self):
        seen["reschedule"] += 1
        raise RescheduleTask()

    @task
    def broken(self):
        seen["broken"] += 1
        raise ValueError("a task bug")

    def on_stop(self):
        seen["user_stop"] += 1

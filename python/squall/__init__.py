"""Squall: load testing scripted like Locust, fast like wrk.

Locust's API is importable from here too: `from squall import HttpUser, task, between`."""

from squall._engine import __version__
from squall.event import events
from squall.mqtt_user import MqttUser
from squall.exception import InterruptTaskSet, RescheduleTask, RescheduleTaskImmediately, StopUser
from squall.shape import LoadTestShape
from squall.user import FastHttpUser, HttpUser, SequentialTaskSet, TaskSet, User, tag, task
from squall.wait_time import between, constant, constant_pacing, constant_throughput


def run_single_user(user_class, host=None, **kwargs):
    """Runs one user of `user_class` until it stops (or Ctrl-C), for debugging a locustfile."""
    from squall.run_script import run_single_user as run

    return run(user_class, host=host, **kwargs)

__all__ = ["__version__", "events", "User", "HttpUser", "FastHttpUser", "MqttUser", "TaskSet", "SequentialTaskSet", "task",
           "tag", "between", "constant", "constant_pacing", "constant_throughput", "LoadTestShape", "StopUser",
           "RescheduleTask", "RescheduleTaskImmediately", "InterruptTaskSet", "run_single_user"]

"""Squall: load testing scripted like Locust, fast like wrk.

Locust's API is importable from here too: `from squall import HttpUser, task, between`. The package
mirrors Locust's module tree (`squall.user.users`, `squall.contrib.fasthttp`, ...), so that `locust`
resolves to it while squall runs a locustfile (see `squall.locust_compat`)."""

from __future__ import annotations

from squall._engine import __version__
from squall.contrib.fasthttp import FastHttpUser
from squall.contrib.mqtt import MqttUser
from squall.debug import run_single_user
from squall.event import events
from squall.exception import InterruptTaskSet, RescheduleTask, RescheduleTaskImmediately, StopUser
from squall.shape import LoadTestShape
from squall.user.task import SequentialTaskSet, TaskSet, tag, task
from squall.user.users import HttpUser, User
from squall.user.wait_time import between, constant, constant_pacing, constant_throughput

__all__ = [
    "FastHttpUser",
    "HttpUser",
    "InterruptTaskSet",
    "LoadTestShape",
    "MqttUser",
    "RescheduleTask",
    "RescheduleTaskImmediately",
    "SequentialTaskSet",
    "StopUser",
    "TaskSet",
    "User",
    "__version__",
    "between",
    "constant",
    "constant_pacing",
    "constant_throughput",
    "events",
    "run_single_user",
    "tag",
    "task",
]

"""Users and their tasks, as in Locust's `locust.user`."""

from __future__ import annotations

from squall.user import wait_time
from squall.user.task import SequentialTaskSet, TaskSet, tag, task
from squall.user.users import HttpUser, User

__all__ = ["HttpUser", "SequentialTaskSet", "TaskSet", "User", "tag", "task", "wait_time"]

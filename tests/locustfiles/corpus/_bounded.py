"""Shared by the corpus: each user runs ITERATIONS (env, default 10) tasks, then stops, so that squall
and Locust make the same requests and the comparison is exact, whatever the run time."""

import os

from locust.exception import StopUser

ITERATIONS = int(os.environ.get("ITERATIONS", "10"))


def count(user):
    """Call at the start of each task: stops the user after ITERATIONS tasks."""
    user.done = getattr(user, "done", 0) + 1
    if user.done > ITERATIONS:
        raise StopUser()

"""Wait times between tasks, as in Locust: `wait_time = between(1, 2)` on a User or TaskSet."""

from __future__ import annotations

import random
import time
from typing import Any, Callable

# A wait time: called with the User or TaskSet (it is a class attribute, so a method), returns seconds.
WaitTime = Callable[[Any], float]


def _said(kind: str, value: Any, wait: WaitTime) -> WaitTime:
    """`wait` marked with what it is (`squall_wait`), so that a native user's engine can wait the same
    (squall.user.native)."""
    wait.squall_wait = (kind, value)  # type: ignore[attr-defined]  # functions take attributes
    return wait


def between(min_wait: float, max_wait: float) -> WaitTime:
    """A random wait, uniform between the two bounds (seconds)."""
    return _said("between", (min_wait, max_wait), lambda instance: min_wait + random.random() * (max_wait - min_wait))


def constant(wait_time: float) -> WaitTime:
    """The same wait every time."""
    return _said("constant", wait_time, lambda instance: wait_time)


def constant_pacing(wait_time: float) -> WaitTime:
    """Start a task every `wait_time` seconds: waits `max(0, wait_time - time the task ran)`."""

    def pacing(instance: Any) -> float:
        now = time.monotonic()
        started = getattr(instance, "_squall_task_started", None)  # when the task that just ran began
        wait = max(0.0, wait_time - (now - started if started is not None else 0.0))
        instance._squall_task_started = now + wait
        return wait

    return _said("pacing", wait_time, pacing)


def constant_throughput(task_runs_per_second: float) -> WaitTime:
    """At most this many task runs per second per user: `constant_pacing(1 / rate)`."""
    return constant_pacing(1.0 / task_runs_per_second)


def poisson(rate: float) -> WaitTime:
    """Waits drawn from an exponential distribution of mean `1 / rate` s: task runs arrive as a Poisson
    process of `rate` a second per user (Locust's)."""
    if rate <= 0:
        raise ValueError(f"poisson() requires a positive rate, got: {rate}")
    return _said("poisson", rate, lambda instance: random.expovariate(rate))

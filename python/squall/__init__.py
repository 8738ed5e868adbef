"""Squall: load testing scripted like Locust, fast like wrk.

Locust's API is importable from here too: `from squall import HttpUser, task, between`. The package
mirrors Locust's module tree (`squall.user.users`, `squall.contrib.fasthttp`, ...), so that `locust`
resolves to it while squall runs a locustfile (see `squall.locust_compat`).

The API loads on first use (PEP 562's module `__getattr__`), not with the package, for start-up:
`squall bench` and `squall mqtt` never use it, and loading it took 0.1 of the 0.24 CPU-s that
`import squall.cli` cost (`python -X importtime`, `/usr/bin/time`, byte-compiled)."""

from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING, Any

# The engine allocates with mimalloc (crates/squall-py: its own allocations, not Python's), which reads
# its options from the environment when the engine loads, so this comes first. Arenas committed as used,
# not at once: 10,000 users `between(1, 2)` peaked at 212 MB of RSS so, 266 MB with mimalloc's default
# and 243 MB with glibc's malloc (/usr/bin/time, same build otherwise), at the same speed.
os.environ.setdefault("MIMALLOC_ARENA_EAGER_COMMIT", "0")
# Memory freed goes back to the system after 10 ms, not mimalloc's 1,000: a script's body kept to its 64
# MiB bound and freed stayed resident while the next request read another (tests/test_hostile.py: a peak
# of 236 MB where 2 bodies make 192; 204 with 50 ms; 10 ms passes). A run's own churn is reused well
# within that: page faults a request the same with 10 ms or 1,000 (shop.py, 50 users; 10,000 users
# `between(1, 2)`, 20 s: 48.6k and 48.4k), and the same CPU within this host's noise (4.9-5.0 CPU-s
# against 5.1-5.8, alternated); 1 ms cost the 10,000 users about a tenth more CPU (5.5-6.4 CPU-s).
os.environ.setdefault("MIMALLOC_PURGE_DELAY", "10")

from squall._engine import __version__  # (after the allocator's option)

if TYPE_CHECKING:
    from squall.contrib.fasthttp import FastHttpUser
    from squall.contrib.mqtt import MqttUser
    from squall.debug import run_single_user
    from squall.event import events
    from squall.exception import InterruptTaskSet, RescheduleTask, RescheduleTaskImmediately, StopUser
    from squall.shape import LoadTestShape
    from squall.user.markov_taskset import MarkovTaskSet, transition, transitions
    from squall.user.task import SequentialTaskSet, TaskSet, tag, task
    from squall.user.users import HttpUser, User
    from squall.user.wait_time import between, constant, constant_pacing, constant_throughput, poisson

# Each name of the API and the module it comes from.
_HOMES = {
    "FastHttpUser": "squall.contrib.fasthttp",
    "HttpUser": "squall.user.users",
    "InterruptTaskSet": "squall.exception",
    "LoadTestShape": "squall.shape",
    "MarkovTaskSet": "squall.user.markov_taskset",
    "MqttUser": "squall.contrib.mqtt",
    "RescheduleTask": "squall.exception",
    "RescheduleTaskImmediately": "squall.exception",
    "SequentialTaskSet": "squall.user.task",
    "StopUser": "squall.exception",
    "TaskSet": "squall.user.task",
    "User": "squall.user.users",
    "between": "squall.user.wait_time",
    "constant": "squall.user.wait_time",
    "constant_pacing": "squall.user.wait_time",
    "constant_throughput": "squall.user.wait_time",
    "events": "squall.event",
    "poisson": "squall.user.wait_time",
    "run_single_user": "squall.debug",
    "tag": "squall.user.task",
    "task": "squall.user.task",
    "transition": "squall.user.markov_taskset",
    "transitions": "squall.user.markov_taskset",
}

__all__ = [
    "FastHttpUser",
    "HttpUser",
    "InterruptTaskSet",
    "LoadTestShape",
    "MarkovTaskSet",
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
    "poisson",
    "run_single_user",
    "tag",
    "task",
    "transition",
    "transitions",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'squall' has no attribute '{name}'")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # once: later reads are plain attribute reads
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOMES})

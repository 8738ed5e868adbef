"""squall's gevent: what a locustfile's `import gevent` (and `gevent.pool`, `gevent.event`,
`gevent.queue`, `gevent.lock`, `gevent.timeout`, `gevent.monkey`, ...) resolves to while squall runs it,
whether or not gevent is installed (squall.locust_compat installs the aliases; outside a run, a real
gevent stays real).

Locust runs its users as greenlets on gevent's hub, so locustfiles use gevent in their tasks: a pool of
greenlets to make several requests at once, a background greenlet started in `on_start`, an event or a
semaphore to hold users until all have spawned, a queue between greenlets, a timeout around a slow
call. squall's users are greenlets on squall's own hub (squall.runtime.hub), which real gevent's hub knows
nothing of: a real gevent pool's requests would run one after another, and a real gevent lock waited
on from a user raises gevent's LoopExit. So this package implements gevent's API (the parts locustfiles
use, with gevent's signatures and semantics) on squall's hub: a `Greenlet` here is a greenlet squall's
hub runs among the users, its requests go to the engine like a user's (several in flight at once), and
its waits are waits on the hub. How waiting works, in a greenlet and in the main greenlet where event
listeners run: `_waiting`. What becomes of greenlets and their exceptions when a run ends: `runs`."""

from __future__ import annotations

from greenlet import GreenletExit, getcurrent

from squall.gevent_compat import event, exceptions, lock, monkey, pool, queue, runs
from squall.gevent_compat import hub as hub
from squall.gevent_compat import timeout as timeout
from squall.gevent_compat.greenlet import Greenlet, iwait, joinall, kill, killall, spawn_raw, wait
from squall.gevent_compat.hub import get_hub, idle, reinit, sleep
from squall.gevent_compat.timeout import Timeout, with_timeout

__all__ = [
    "Greenlet",
    "GreenletExit",
    "Timeout",
    "event",
    "exceptions",
    "get_hub",
    "getcurrent",
    "getswitchinterval",
    "idle",
    "iwait",
    "joinall",
    "kill",
    "killall",
    "lock",
    "monkey",
    "pool",
    "queue",
    "reinit",
    "runs",
    "setswitchinterval",
    "sleep",
    "spawn",
    "spawn_later",
    "spawn_raw",
    "wait",
    "with_timeout",
]

spawn = Greenlet.spawn
spawn_later = Greenlet.spawn_later

_switch_interval = 0.005


def getswitchinterval() -> float:
    return _switch_interval


def setswitchinterval(interval: float) -> None:
    """Accepted and kept; squall's hub switches at each wait, not on an interval."""
    global _switch_interval
    _switch_interval = interval

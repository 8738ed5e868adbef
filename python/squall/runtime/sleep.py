"""`time.sleep` while squall runs a locustfile (`cooperative_sleep`, installed when the file loads)."""

from __future__ import annotations

import threading
import time
from typing import SupportsIndex

from greenlet import getcurrent

from squall.runtime import gevent_hub
from squall.runtime.hub import Hub

real_sleep = time.sleep


class CooperativeSleep:
    """`time.sleep` while squall runs a locustfile: in a user (or any greenlet but the hub's) it waits on
    the hub's timers, so the other users go on (as Locust's gevent patching does); outside a run, or in
    another thread (the dashboard's, where a locustfile's Flask routes run), gevent's sleep where gevent
    patched the standard library (a thread the file started at import is a greenlet then, and must let
    the rest go on), else the standard library's."""

    hub: Hub | None = None  # the hub of the run, once it starts
    thread = threading.get_native_id()  # the hub's OS thread

    def __call__(self, seconds: float | SupportsIndex) -> None:
        hub = self.hub
        if hub is not None and getcurrent() is not hub.main and threading.get_native_id() == self.thread:
            hub.sleep(float(seconds))
        elif gevent_hub.enabled() and (hub is None or getcurrent() is not hub.main):
            gevent_hub.sleep(float(seconds))
        else:
            real_sleep(seconds)


cooperative_sleep = CooperativeSleep()

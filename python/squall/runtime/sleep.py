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
    """`time.sleep` while squall runs a locustfile: in a user (or, without gevent, any greenlet but the
    hub's) it waits on the hub's timers, so the other users go on (as Locust's gevent patching does);
    elsewhere gevent's sleep where gevent patched the standard library, else the standard library's.
    With gevent, only users sleep on the hub's timers, which stop with the run (`gevent_hub.unbind`): a
    greenlet that outlives it (a thread of a library or of the file, as a gRPC server's thread pool that
    an init listener started, or one a listener spawned) sleeps on gevent's, which go on after it. On
    squall's, it slept for ever once the run ended, and the interpreter's exit joined it for ever."""

    hub: Hub | None = None  # the hub of the run, once it starts
    thread = threading.get_native_id()  # the hub's OS thread

    def __call__(self, seconds: float | SupportsIndex) -> None:
        hub = self.hub
        g = getcurrent()
        if (
            hub is not None
            and g is not hub.main
            and (getattr(g, "squall_user", False) if gevent_hub.enabled() else True)
            and threading.get_native_id() == self.thread
        ):
            hub.sleep(float(seconds))
        elif gevent_hub.enabled() and (hub is None or g is not hub.main):
            gevent_hub.sleep(float(seconds))
        else:
            real_sleep(seconds)


cooperative_sleep = CooperativeSleep()

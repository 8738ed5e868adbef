"""`gevent.hub`: `sleep`, `idle`, `kill`, `spawn_raw`, `getcurrent` and `get_hub`, on squall's hub.

`sleep` in a greenlet waits on squall's hub (`sleep(0)` lets the others run first); in the main
greenlet (a listener) it runs the hub for that long, so the users go on, as under Locust; before a run
it sleeps. `get_hub()` is a stand-in for gevent's hub object with what locustfiles use of it (printing
an error as gevent does, `join`); there is no libev loop behind it."""

from __future__ import annotations

import sys
import time
import traceback
from typing import Any

from greenlet import GreenletExit, getcurrent

from squall.gevent_compat._waiting import _real_sleep, adopt, run_main_until
from squall.gevent_compat.exceptions import LoopExit
from squall.gevent_compat.greenlet import kill, spawn_raw, wait
from squall.runtime.hub import current_hub

__all__ = ["GreenletExit", "LoopExit", "get_hub", "getcurrent", "idle", "kill", "reinit", "sleep", "spawn_raw"]


def sleep(seconds: float = 0, ref: bool = True) -> None:
    """Suspends the current greenlet for at least `seconds` (0: lets the other greenlets run first)."""
    hub = current_hub()
    if hub is not None and getcurrent() is not hub.main:
        hub.sleep(seconds)
    elif hub is None:
        if seconds > 0:
            _real_sleep(seconds)
    elif seconds <= 0:
        adopt(hub)
        hub.run_until(time.monotonic())  # one pass over the greenlets ready now
    else:
        run_main_until(lambda: False, time.monotonic() + seconds)


def idle(priority: int = 0) -> None:
    """Lets every other greenlet that is ready run first (gevent: until the loop is idle)."""
    sleep(0)


def reinit(hub: Any = None) -> None:
    """After a fork, in gevent; nothing to do here."""


class Hub:
    """What locustfiles use of gevent's hub object."""

    SYSTEM_ERROR = (KeyboardInterrupt, SystemExit, SystemError)
    NOT_ERROR = (GreenletExit, SystemExit)

    @property
    def exception_stream(self) -> Any:
        return sys.stderr

    def handle_error(self, context: Any, type_: Any, value: Any, tb: Any) -> None:
        """Prints the error as gevent's hub does."""
        if not (isinstance(value, self.NOT_ERROR) or (isinstance(type_, type) and issubclass(type_, self.NOT_ERROR))):
            self.print_exception(context, type_, value, tb)

    def print_exception(self, context: Any, type_: Any, value: Any, tb: Any) -> None:
        if value is None:
            sys.stderr.write(f"{getattr(type_, '__name__', type_)}\n")
        else:
            traceback.print_exception(type_, value, tb, file=sys.stderr)
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        if context is None:
            sys.stderr.write(f"{stamp}\n")
        else:
            sys.stderr.write(f"{stamp} {context!r} failed with {getattr(type_, '__name__', 'exception')}\n\n")

    def join(self, timeout: float | None = None) -> bool:
        """Waits until nothing runs on squall's hub any more, or `timeout` seconds."""
        return bool(wait(None, timeout))


_HUB = Hub()


def get_hub(*_args: Any, **_kwargs: Any) -> Hub:
    return _HUB

"""`gevent.lock`: `Semaphore`, `BoundedSemaphore`, `DummySemaphore` and `RLock`, with gevent's semantics
on squall's hub.

A release from anywhere (a user, a greenlet, a listener in the main greenlet such as
`spawning_complete`) wakes the greenlets waiting, in the order they came: those in `wait()` all, those
in `acquire()` as many as there are counts free. As in gevent, an `acquire` that finds a count free
takes it at once, even if a woken waiter has not run yet; that waiter then waits again, first in line.
`acquire()` in the main greenlet when nothing is free runs the hub until something is (see `_waiting`):
the users go on meanwhile, as they would under Locust while a listener blocks."""

from __future__ import annotations

from collections import deque
from typing import Any

from greenlet import getcurrent, greenlet

from squall.gevent_compat._waiting import Waiter, wait_until, wake_all, wake_some
from squall.gevent_compat.event import Linkable

__all__ = ["BoundedSemaphore", "DummySemaphore", "RLock", "Semaphore"]


class Semaphore(Linkable):
    """`Semaphore(value=1)`: `acquire(blocking=True, timeout=None)` takes a count, `release()` returns one."""

    def __init__(self, value: int = 1, hub: Any = None) -> None:
        if value < 0:
            raise ValueError("semaphore initial value must be >= 0")
        super().__init__()
        self.counter = value
        self._acquirers: deque[Waiter] = deque()  # (self._waiters: those in wait(), which take nothing)

    def __str__(self) -> str:
        return f"<{type(self).__name__} counter={self.counter} _links[{len(self._links)}]>"

    def locked(self) -> bool:
        """True if `acquire` would block."""
        return self.counter <= 0

    def ready(self) -> bool:
        """True if `acquire` would not block."""
        return self.counter > 0

    def release(self) -> int:
        """Returns a count (even beyond the initial value, as gevent allows) and wakes waiters."""
        self.counter += 1
        self._notify()
        return self.counter

    def _notify(self) -> None:
        if self.counter > 0:
            wake_all(self._waiters)
            wake_some(self._acquirers, self.counter)
            self._schedule_links()

    def wait(self, timeout: float | None = None) -> int:
        """Waits until a count is free (taking none), or `timeout` seconds; returns the free counts."""
        if self.counter <= 0:
            wait_until(self._waiters, self.ready, timeout, self._notify)
        return self.counter

    def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        """Takes a count: at once if one is free; else, with `blocking`, when one is released (False if
        `timeout` seconds pass first)."""
        if self.counter > 0:
            self.counter -= 1
            return True
        if not blocking or not wait_until(self._acquirers, self.ready, timeout, self._notify):
            return False
        self.counter -= 1
        return True

    def __enter__(self) -> None:
        self.acquire()

    def __exit__(self, *_exc: Any) -> None:
        self.release()

    def _at_fork_reinit(self) -> None:
        self.counter = 1


class BoundedSemaphore(Semaphore):
    """A semaphore that cannot be released beyond its initial value (ValueError)."""

    def __init__(self, value: int = 1, hub: Any = None) -> None:
        super().__init__(value, hub)
        self._initial_value = value

    def release(self) -> int:
        if self.counter >= self._initial_value:
            raise ValueError("Semaphore released too many times")
        return super().release()


class DummySemaphore:
    """A semaphore that never blocks (what `Pool(None)` uses)."""

    def __init__(self, value: int | None = None) -> None:
        self.value = value

    def __str__(self) -> str:
        return f"<{type(self).__name__}>"

    def locked(self) -> bool:
        return False

    def ready(self) -> bool:
        return True

    def release(self) -> None:
        pass

    def rawlink(self, callback: Any) -> None:
        pass

    def unlink(self, callback: Any) -> None:
        pass

    def wait(self, timeout: float | None = None) -> int:
        return 1

    def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        return True

    def __enter__(self) -> None:
        pass

    def __exit__(self, *_exc: Any) -> None:
        pass


class RLock:
    """A mutex its holder (the greenlet that took it) may take again; each take needs its release."""

    def __init__(self, hub: Any = None) -> None:
        self._block = Semaphore(1)
        self._owner: greenlet | None = None
        self._count = 0

    def __repr__(self) -> str:
        state = f"_block={self._block} _count={self._count!r} _owner={self._owner!r}"
        return f"<{type(self).__name__} at {hex(id(self))} {state})>"

    def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        me = getcurrent()
        if self._owner is me:
            self._count += 1
            return True
        taken = self._block.acquire(blocking, timeout)
        if taken:
            self._owner = me
            self._count = 1
        return taken

    def __enter__(self) -> bool:
        return self.acquire()

    def release(self) -> None:
        if self._owner is not getcurrent():
            raise RuntimeError(f"cannot release un-acquired lock. Owner: {self._owner!r} Current: {getcurrent()!r}")
        self._count -= 1
        if not self._count:
            self._owner = None
            self._block.release()

    def __exit__(self, *_exc: Any) -> None:
        self.release()

    def locked(self) -> bool:
        return self._block.locked()

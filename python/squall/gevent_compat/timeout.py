"""`gevent.timeout`: `Timeout` and `with_timeout`, with gevent's semantics on squall's hub.

`Timeout(seconds).start()` raises the timeout (or the exception given) in the greenlet that started it,
wherever that greenlet waits when the time is up: a request in flight, a sleep, a lock, a queue, a
join. The hub throws it in on its next pass (`Hub.throw`), and the wait it lands in takes back
whatever else was due to resume it there. Cancelled in time (the end of a `with` block), it raises
nothing, even if it fell due in the same pass. Started in the main greenlet, it is raised by the main
greenlet's next wait that reaches it (see `_waiting`). A request abandoned this way still completes in
the engine, which counts it in the statistics when it ends (Locust's never does: gevent closes its
socket)."""

from __future__ import annotations

import time
from typing import Any, Callable, TypeVar

from greenlet import getcurrent, greenlet

from squall.gevent_compat import _waiting
from squall.runtime.hub import current_hub

__all__ = ["Timeout", "with_timeout"]

T = TypeVar("T")


class Timeout(BaseException):
    """`Timeout(seconds=None, exception=None)`: raises `exception` (itself if None, False or a string)
    in the current greenlet after `seconds`; None never expires. As a context manager it starts on
    entry and is cancelled on exit; with `exception=False` the block's own timeout is swallowed."""

    def __init__(
        self,
        seconds: float | None = None,
        exception: Any = None,
        ref: bool = True,
        priority: int = -1,
        _one_shot: bool = False,
    ) -> None:
        BaseException.__init__(self)
        self.seconds = seconds
        self.exception = exception
        self.when = 0.0  # (monotonic) when it falls due, once started
        self._pending = False
        self._target: greenlet | None = None
        self._timer: list[Any] | None = None
        self._raising: BaseException | None = None
        self._thrown = False

    def _what_to_raise(self) -> BaseException:
        exc = self.exception
        if exc is None or exc is False or isinstance(exc, str):
            return self
        if isinstance(exc, type):
            exc = exc()
        return exc if isinstance(exc, BaseException) else self

    def start(self) -> None:
        """Schedules the timeout for the current greenlet."""
        if self.pending:
            raise AssertionError(f"{self!r} is already started; to restart it, cancel it first")
        if self.seconds is None:
            return
        self._raising = self._what_to_raise()
        self._thrown = False
        self.when = time.monotonic() + max(float(self.seconds), 0.0)
        hub = current_hub()
        target = getcurrent()
        self._pending = True
        if hub is None or target is hub.main:
            self._target = None
            _waiting.main_timers.append(self)
        else:
            self._target = target
            self._timer = hub.call_later(self.when - time.monotonic(), self._on_expiration)

    def _on_expiration(self) -> None:
        """In a timer's greenlet on the hub: the target gets the exception where it waits."""
        self._pending = False
        self._timer = None
        hub = current_hub()
        if hub is not None and self._target is not None and self._raising is not None:
            self._thrown = True
            hub.throw(self._target, self._raising)

    def expire_in_main(self) -> BaseException:
        """Fell due during a wait of the main greenlet: what that wait raises."""
        self._pending = False
        return self._raising if self._raising is not None else self

    @classmethod
    def start_new(
        cls, timeout: float | Timeout | None = None, exception: Any = None, ref: bool = True, _one_shot: bool = False
    ) -> Timeout:
        """A started timeout: `timeout` itself if it is one, else a new one of `timeout` seconds."""
        if isinstance(timeout, Timeout):
            if not timeout.pending:
                timeout.start()
            return timeout
        t = cls(timeout, exception, ref=ref, _one_shot=_one_shot)
        t.start()
        return t

    @staticmethod
    def _start_new_or_dummy(timeout: float | None, exception: Any = None, ref: bool = True) -> Timeout:
        return Timeout.start_new(timeout, exception, ref, _one_shot=True)

    @property
    def pending(self) -> bool:
        """True while it is scheduled to be raised."""
        return self._pending

    def cancel(self) -> None:
        """It will not be raised (even if it fell due and waits to be thrown in); it may be started again."""
        if self._pending:
            self._pending = False
            if self._timer is not None:
                current_hub().cancel(self._timer)  # type: ignore[union-attr]
                self._timer = None
            elif self in _waiting.main_timers:
                _waiting.main_timers.remove(self)
        elif self._thrown and self._target is not None and self._raising is not None:
            hub = current_hub()
            if hub is not None:
                hub.cancel_throw(self._target, self._raising)
        self._thrown = False

    close = cancel

    def __enter__(self) -> Timeout:
        if not self.pending:
            self.start()
        return self

    def __exit__(self, typ: Any, value: Any, tb: Any) -> bool | None:
        self.close()
        if value is self and self.exception is False:
            return True  # the block's own silent timeout: suppressed
        return None

    def __repr__(self) -> str:
        pending = " pending" if self.pending else ""
        exception = "" if self.exception is None else f" exception={self.exception!r}"
        return f"<{type(self).__name__} at {hex(id(self))} seconds={self.seconds}{exception}{pending}>"

    def __str__(self) -> str:
        if self.seconds is None:
            return ""
        suffix = "" if self.seconds == 1 else "s"
        if self.exception is None:
            return f"{self.seconds} second{suffix}"
        if self.exception is False:
            return f"{self.seconds} second{suffix} (silent)"
        return f"{self.seconds} second{suffix}: {self.exception}"

    def __lt__(self, other: Any) -> bool:
        other_seconds = other.seconds if isinstance(other, Timeout) else other
        return bool(self.seconds < other_seconds)  # type: ignore[operator]


_NONE: Any = object()


def with_timeout(seconds: float | None, function: Callable[..., T], *args: Any, **kwds: Any) -> T:
    """`function(*args, **kwds)` under a timeout; with `timeout_value=`, that value instead of raising."""
    timeout_value = kwds.pop("timeout_value", _NONE)
    timeout = Timeout.start_new(seconds, _one_shot=True)
    try:
        try:
            return function(*args, **kwds)
        except Timeout as ex:
            if ex is timeout and timeout_value is not _NONE:
                return timeout_value  # type: ignore[no-any-return]
            raise
    finally:
        timeout.cancel()

"""`gevent.event`: `Event` and `AsyncResult`, with gevent's semantics on squall's hub. Setting one
from anywhere (a user, a greenlet, a listener in the main greenlet) wakes every greenlet waiting on it;
waiting in the main greenlet runs the hub meanwhile (see `_waiting`)."""

from __future__ import annotations

import sys
from collections import deque
from typing import TYPE_CHECKING, Any, Callable

from squall.gevent_compat._waiting import Waiter, wait_until, wait_woken, wake_all
from squall.gevent_compat.timeout import Timeout
from squall.runtime.hub import current_hub

if TYPE_CHECKING:
    from types import TracebackType

__all__ = ["AsyncResult", "Event"]


class Linkable:
    """gevent's rawlink protocol for an object that becomes ready: its callbacks are called with it, on
    the hub's next pass, each time it becomes (or is found) ready, until unlinked."""

    def __init__(self) -> None:
        self._waiters: deque[Waiter] = deque()
        self._links: list[Callable[[Any], None]] = []
        self._notifying = False

    def ready(self) -> bool:
        raise NotImplementedError

    def rawlink(self, callback: Callable[[Any], None]) -> None:
        if not callable(callback):
            raise TypeError(f"Expected callable: {callback!r}")
        self._links.append(callback)
        if self.ready():
            self._schedule_links()

    def unlink(self, callback: Callable[[Any], None]) -> None:
        if callback in self._links:
            self._links.remove(callback)

    def linkcount(self) -> int:
        return len(self._links)

    def _notify(self) -> None:
        """It may have become ready: wakes whoever waits, and calls the links."""
        wake_all(self._waiters)
        self._schedule_links()

    def _schedule_links(self) -> None:
        if not self._links or self._notifying:
            return
        self._notifying = True
        hub = current_hub()
        if hub is None:
            self._call_links()
        else:
            hub.spawn(self._call_links)

    def _call_links(self) -> None:
        self._notifying = False
        if not self.ready():
            return
        for link in list(self._links):
            try:
                link(self)
            except Exception:
                sys.excepthook(*sys.exc_info())  # printed, as gevent does


class Event(Linkable):
    """A flag greenlets wait for: `set()` wakes them all; `wait(timeout)` returns the flag."""

    def __init__(self) -> None:
        super().__init__()
        self._flag = False

    def __str__(self) -> str:
        return f"<{type(self).__name__} {'set' if self._flag else 'clear'} _links[{len(self._links)}]>"

    def is_set(self) -> bool:
        return self._flag

    isSet = is_set  # gevent's (and threading's) old name

    def ready(self) -> bool:
        return self._flag

    def set(self) -> None:
        self._flag = True
        self._notify()

    def clear(self) -> None:
        self._flag = False

    def wait(self, timeout: float | None = None) -> bool:
        """Blocks until set, or `timeout` seconds; returns True if it was set (even if cleared since),
        False if the time ran out."""
        return self._flag or wait_woken(self._waiters, timeout)


class AsyncResult(Linkable):
    """A value (or an exception) some greenlet will deliver: `set`/`set_exception`, then `get`."""

    def __init__(self) -> None:
        super().__init__()
        self._value: Any = _NOT_SET
        self._exc_info: tuple[type[BaseException], BaseException, TracebackType | None] | None = None

    def __str__(self) -> str:
        state = "unset" if not self.ready() else (f"value={self._value!r}" if self.successful() else "exception")
        return f"<{type(self).__name__} {state}>"

    @property
    def value(self) -> Any:
        """The value set, or None (also when an exception was)."""
        return self._value if self._value is not _NOT_SET else None

    @property
    def exc_info(self) -> tuple[type[BaseException], BaseException, TracebackType | None] | tuple[()]:
        return self._exc_info or ()

    @property
    def exception(self) -> BaseException | None:
        return self._exc_info[1] if self._exc_info else None

    def ready(self) -> bool:
        return self._exc_info is not None or self._value is not _NOT_SET

    def successful(self) -> bool:
        return self._value is not _NOT_SET and self._exc_info is None

    def set(self, value: Any = None) -> None:
        self._value = value
        self._exc_info = None
        self._notify()

    def set_exception(
        self,
        exception: BaseException,
        exc_info: tuple[type[BaseException], BaseException, TracebackType | None] | None = None,
    ) -> None:
        self._exc_info = exc_info or (type(exception), exception, exception.__traceback__)
        self._notify()

    def get(self, block: bool = True, timeout: float | None = None) -> Any:
        """The value, or the exception raised; gevent's Timeout if none came in time (at once without
        `block`)."""
        if not self.ready() and (not block or not wait_until(self._waiters, self.ready, timeout)):
            raise Timeout(timeout)
        if self._exc_info is not None:
            raise self._exc_info[1].with_traceback(self._exc_info[2])
        return self._value

    def get_nowait(self) -> Any:
        return self.get(block=False)

    def wait(self, timeout: float | None = None) -> Any:
        """Blocks until ready or `timeout`; returns the value (None if not ready or an exception)."""
        wait_until(self._waiters, self.ready, timeout)
        return self.value

    def __call__(self, source: Any) -> None:
        """As a link callback of a greenlet: its result, or its exception."""
        if source.successful():
            self.set(source.value)
        else:
            self.set_exception(source.exception, getattr(source, "exc_info", None))

    # concurrent.futures.Future's names, as gevent has them
    def result(self, timeout: float | None = None) -> Any:
        return self.get(timeout=timeout)

    def done(self) -> bool:
        return self.ready()

    def cancel(self) -> bool:
        return False

    def cancelled(self) -> bool:
        return False


_NOT_SET: Any = object()

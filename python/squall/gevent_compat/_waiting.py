"""How squall's gevent waits on squall's hub: what every blocking call of the package comes down to.

A greenlet that must wait (a lock taken, an empty queue, an event not set, a greenlet not finished)
registers a `Waiter` with the object and switches to the hub's main greenlet; whoever makes the object
ready wakes it by queueing it on the hub (`hub.ready`), and an optional timer wakes it at its deadline.
Exactly one of the two resumes it (the first disarms the other), and a greenlet thrown out of the wait
(killed, a gevent Timeout) takes back a wake already queued for it, so that nothing resumes it later in
a wait it has moved on to. A woken waiter checks the object again: as in gevent, a greenlet that comes
along meanwhile may take what was freed (a lock, a queue item), and then the waiter waits again, first
in line.

The main greenlet cannot wait that way: it is the hub's own (event listeners such as `test_start`,
`spawning_complete` and `test_stop` run in it, as does module-level code). Suspending it would stop
everything, so a wait there runs the hub itself, a millisecond at a time, until the object is ready or
the deadline passes: the users and their greenlets go on meanwhile, which is what the same listener
does under Locust, where the main greenlet blocks and gevent's hub runs the rest. The run's own loop
(spawning, the stats table, the end of `-t`) resumes when the listener returns. When nothing at all is
left on the hub that could end a wait without a timeout, it raises gevent's `LoopExit` rather than hang;
Ctrl-C (or SIGTERM) during such a wait ends it as a timeout would, and the run stops as usual."""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections import deque
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Callable, Protocol

from greenlet import getcurrent, greenlet

from squall.gevent_compat.exceptions import LoopExit
from squall.runtime.hub import current_hub

if TYPE_CHECKING:
    from types import FrameType

    from squall.runtime.hub import Hub

MAIN_SLICE = 0.001  # how long the main greenlet runs the hub between two looks at what it waits for

_real_sleep = time.sleep  # squall replaces time.sleep while a locustfile runs; a wait with no hub sleeps


class MainTimer(Protocol):
    """A gevent Timeout started in the main greenlet: raised by the main greenlet's next wait that
    reaches `when`."""

    when: float

    def expire_in_main(self) -> BaseException: ...


main_timers: list[MainTimer] = []
_unscheduled: list[greenlet] = []  # greenlets started before the run's hub existed (module-level spawns)


def schedule(g: greenlet) -> None:
    """Queues `g` to run (resumed with None) on the hub, or on the first hub made if none exists yet."""
    hub = current_hub()
    if hub is None:
        _unscheduled.append(g)
    else:
        adopt(hub)
        hub.ready.append((g, None))


def adopt(hub: Hub) -> None:
    """Hands the greenlets started before the hub existed to it."""
    while _unscheduled:
        hub.ready.append((_unscheduled.pop(0), None))


def in_main(hub: Hub | None) -> bool:
    """Whether the calling greenlet is the hub's main one (or there is no hub yet)."""
    return hub is None or getcurrent() is hub.main


class Waiter:
    """One greenlet's wait: `block` suspends it until `wake` or the deadline, whichever comes first. In
    the main greenlet (or with no hub yet), `block` runs the hub until then instead."""

    __slots__ = ("_main", "_queued", "_timer", "greenlet", "hub", "lost_wake", "timed_out", "woken")

    def __init__(self, hub: Hub | None) -> None:
        self.hub = hub
        self.greenlet = getcurrent()
        self._main = hub is None or self.greenlet is hub.main
        self.woken = False  # woken or timed out: further wakes do nothing
        self.timed_out = False
        self.lost_wake = False  # woken, but thrown out of the wait before it could resume
        self._queued: tuple[greenlet, Any] | None = None
        self._timer: list[Any] | None = None

    def wake(self, *_source: Any) -> None:
        """Resumes the waiting greenlet on the hub's next pass (a link callback, hence the argument)."""
        if self.woken:
            return
        self.woken = True
        if not self._main:
            self._queued = (self.greenlet, self)
            self.hub.ready.append(self._queued)  # type: ignore[union-attr]

    def _expire(self) -> None:
        if not self.woken:
            self.timed_out = True
            self.wake()

    def block(self, deadline: float | None) -> bool:
        """Suspends the calling greenlet until woken (True) or the monotonic `deadline` (False)."""
        hub = self.hub
        if self._main or hub is None:
            try:
                return run_main_until(lambda: self.woken, deadline)
            finally:
                self.woken = True  # disarmed
        if deadline is not None:
            self._timer = hub.call_later(deadline - time.monotonic(), self._expire)
        try:
            hub.main.switch()
        except BaseException:
            self.lost_wake = self.woken and not self.timed_out
            self.woken = True  # disarmed: nothing resumes it here any more
            if self._queued is not None:
                hub.unqueue(self._queued)
            raise
        finally:
            if self._timer is not None:
                hub.cancel(self._timer)
        return not self.timed_out


def wake_all(waiters: deque[Waiter]) -> None:
    while waiters:
        waiters.popleft().wake()


def wake_some(waiters: deque[Waiter], count: int) -> None:
    """Wakes the first `count` waiters still waiting, in order."""
    while count > 0 and waiters:
        w = waiters.popleft()
        if not w.woken:
            w.wake()
            count -= 1


def wait_until(
    waiters: deque[Waiter],
    ready: Callable[[], bool],
    timeout: float | None,
    pass_on: Callable[[], None] | None = None,
) -> bool:
    """Blocks the calling greenlet until `ready()` (checked again each time it is woken) or `timeout`
    seconds; returns `ready()`. The caller's object wakes `waiters` when it may have become ready;
    `pass_on` wakes the next in line when a woken waiter is thrown out before it could resume."""
    if ready():
        return True
    deadline = None if timeout is None else time.monotonic() + max(timeout, 0.0)
    hub = current_hub()
    if hub is None or getcurrent() is hub.main:
        return run_main_until(ready, deadline)
    first = True
    while True:
        w = Waiter(hub)
        if first:
            waiters.append(w)
        else:
            waiters.appendleft(w)  # woken, but someone else took it: first in line again
        first = False
        try:
            woke = w.block(deadline)
        except BaseException:
            if w.lost_wake and pass_on is not None:
                pass_on()
            else:
                with contextlib.suppress(ValueError):
                    waiters.remove(w)
            raise
        if ready():
            return True
        if not woke:
            with contextlib.suppress(ValueError):
                waiters.remove(w)
            return False


def wait_woken(waiters: deque[Waiter], timeout: float | None) -> bool:
    """Blocks the calling greenlet until the object wakes `waiters` (True) or `timeout` seconds (False),
    without checking anything again: an event set and cleared at once still wakes whoever waited."""
    deadline = None if timeout is None else time.monotonic() + max(timeout, 0.0)
    w = Waiter(current_hub())
    waiters.append(w)
    try:
        woke = w.block(deadline)
    except BaseException:
        with contextlib.suppress(ValueError):
            waiters.remove(w)
        raise
    if not woke:
        with contextlib.suppress(ValueError):
            waiters.remove(w)
    return woke


def run_main_until(ready: Callable[[], bool], deadline: float | None) -> bool:
    """The main greenlet's wait (see the module's docstring): runs the hub until `ready()` or the
    monotonic `deadline`; returns `ready()`."""
    hub = current_hub()
    if hub is not None:
        adopt(hub)
    with _stop_signals_end_the_wait() as stopped:
        while not ready():
            now = time.monotonic()
            _raise_due_main_timer(now)
            if (deadline is not None and now >= deadline) or stopped:
                return ready()
            until = now + MAIN_SLICE
            for t in (deadline, *(m.when for m in main_timers)):
                if t is not None:
                    until = min(until, t)
            if hub is None:
                if deadline is None and not main_timers:
                    raise LoopExit("This operation would block forever (no run is going on)")
                _real_sleep(max(until - now, 0.0))
            elif deadline is None and not main_timers and hub_is_idle(hub):
                raise LoopExit("This operation would block forever (nothing on the hub can end it)")
            else:
                hub.run_until(until)
    return True


def hub_is_idle(hub: Hub) -> bool:
    """Nothing on the hub could run again: nothing ready, in flight, or timed (cancelled timers aside)."""
    if hub.ready or hub.pending or hub.watchers:
        return False
    return all(timer[1].dead for timer in hub.timers)


def _raise_due_main_timer(now: float) -> None:
    for m in main_timers:
        if m.when <= now:
            main_timers.remove(m)
            raise m.expire_in_main()


@contextlib.contextmanager
def _stop_signals_end_the_wait() -> Iterator[list[int]]:
    """While the main greenlet waits, SIGINT and SIGTERM also end the wait (the run's own handler still
    runs, and stops the run), so that a wait nothing will end cannot hang the run."""
    got: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield got
        return
    signals = (signal.SIGINT, signal.SIGTERM)
    previous: dict[int, Any] = {s: signal.getsignal(s) for s in signals}

    def handler(signum: int, frame: FrameType | None) -> None:
        got.append(signum)
        before = previous[signum]
        if callable(before):
            before(signum, frame)
        elif before == signal.SIG_DFL:
            signal.signal(signum, signal.SIG_DFL)
            signal.raise_signal(signum)

    for s in signals:
        signal.signal(s, handler)
    try:
        yield got
    finally:
        for signum, h in previous.items():
            if h is not None:  # (None: a handler not set from Python, which cannot be put back)
                signal.signal(signum, h)

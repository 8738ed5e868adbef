"""The cooperative scheduler: one greenlet per user, on the same thread as the engine.

A greenlet's request goes straight into the engine (`ScriptEngine.submit`: a task is added to the
engine's local set; nothing is sent to another thread). The hub runs the greenlets that are ready, one
pass at a time; between passes it polls the engine once without waiting, so that responses are read and
timed while users keep working; when nothing is ready it waits in the engine (GIL released, one epoll
for sockets and the next timer) until completions arrive or the next greenlet timer falls due."""

from __future__ import annotations

import heapq
import itertools
import time
from collections import deque
from typing import TYPE_CHECKING, Any, Callable

from greenlet import GreenletExit, getcurrent, greenlet

# Greenlet timers (think times, sleeps) fire up to this late, so that the hub wakes once for all the
# timers of a millisecond instead of once for each: 1,000 users with between(0.1, 0.2) have a timer due
# every 150 µs, and each wake costs a poll of the engine (about half the CPU per request, measured).
# Never early: a sleep lasts at least what was asked, as time.sleep does.
TIMER_SLACK = 0.001

if TYPE_CHECKING:
    from squall._engine import Completion, ScriptEngine
    from squall.contrib.mqtt import MqttClient


class Hub:
    def __init__(self, engine: ScriptEngine) -> None:
        self.engine = engine
        self.main = getcurrent()
        self.ready: deque[tuple[greenlet, Any]] = deque()  # (greenlet, value to resume it with)
        self.timers: list[tuple[float, int, greenlet]] = []  # heap of (when, seq, greenlet)
        self.pending: dict[int, greenlet] = {}  # operation id -> the greenlet waiting for its completion
        self.watchers: dict[int, Callable[[Completion], None]] = {}  # MQTT operation id -> callback
        self.mqtt_clients: dict[int, MqttClient] = {}  # user id -> its MQTT client, for messages
        self.seq = itertools.count()
        self.entered: float | None = None  # when the running greenlet got control; None while the hub runs
        self.on_arrivals: Callable[[list[float]], None] | None = None  # the open model's dispatch

    def spawn(self, fn: Callable[..., Any], *args: Any) -> greenlet:
        g = greenlet(lambda *_first_switch: fn(*args), parent=self.main)
        self.ready.append((g, None))
        return g

    def sleep(self, seconds: float) -> Any:
        """Suspends the calling greenlet for `seconds` (0: lets the others run first)."""
        if seconds <= 0:
            self.ready.append((getcurrent(), None))
        else:
            heapq.heappush(self.timers, (time.monotonic() + seconds, next(self.seq), getcurrent()))
        return self.main.switch()

    def wait_for(self, op_id: int) -> Completion:
        """Suspends the calling greenlet until operation `op_id` completes; returns its completion."""
        self.pending[op_id] = getcurrent()
        try:
            return self.main.switch()  # type: ignore[no-any-return]
        finally:
            self.pending.pop(op_id, None)  # killed while waiting: its completion will never come

    def watch(self, op_id: int, on_done: Callable[[Completion], None]) -> None:
        """Calls `on_done` with operation `op_id`'s completion, without suspending anyone."""
        self.watchers[op_id] = on_done

    def close_user(self, user_id: int) -> None:
        """The user stopped: the engine closes its connections and cancels what it still has in flight
        (its MQTT operations already queued still go out first, in order)."""
        self.engine.close_user(user_id)
        self.mqtt_clients.pop(user_id, None)

    def running_for(self) -> float:
        """How long the greenlet now running has held control (0 while the hub runs)."""
        return 0.0 if self.entered is None else time.monotonic() - self.entered

    def kill(self, g: greenlet) -> None:
        """Ends a greenlet with GreenletExit (its `finally` blocks and on_stop still run)."""
        if not g.dead:
            self.ready.append((g, _Kill))

    def run_until(self, deadline: float | None) -> None:
        """Runs everything that is due until the monotonic `deadline` (None: until nothing is left)."""
        while True:
            # One pass over the greenlets ready now: one that only yields (an MQTT publisher with no
            # wait) runs again on the next pass, after the engine has had a turn.
            for _ in range(len(self.ready)):
                g, value = self.ready.popleft()
                if g.dead:
                    continue
                self.entered = time.monotonic()
                if value is _Kill:
                    g.throw(GreenletExit)
                else:
                    g.switch(value)
                self.entered = None
            now = time.monotonic()
            while self.timers and self.timers[0][0] <= now:
                self.ready.append((heapq.heappop(self.timers)[2], None))
            if deadline is not None and now >= deadline:
                return
            if not self.ready and deadline is None and not self.pending and not self.timers and not self.watchers:
                return
            if self.ready:
                wake = 0.0
            else:
                first = self.timers[0][0] + TIMER_SLACK if self.timers else None
                due = [t for t in (deadline, first) if t is not None]
                wake = max(0.0, min(due, default=now + 0.1) - now)
            self._dispatch(self.engine.poll(wake))
            if self.on_arrivals is not None:
                arrivals = self.engine.arrivals()
                if arrivals:
                    self.on_arrivals(arrivals)

    def _dispatch(self, completions: list[Completion]) -> None:
        for c in completions:
            g = self.pending.pop(c.id, None)
            if g is not None:
                self.ready.append((g, c))
            callback = self.watchers.pop(c.id, None)
            if callback is not None:
                callback(c)
        if self.mqtt_clients:
            for m in self.engine.messages():
                client = self.mqtt_clients.get(m.user)
                if client is not None:
                    client._deliver(m.topic, m.payload, m.qos)


class _Kill:
    """Marker: throw GreenletExit into the greenlet instead of resuming it."""

"""The cooperative scheduler: one greenlet per user, with every request, wait and timer handed to the
engine or the hub. The hub runs ready greenlets, submits their requests in one batch, and sleeps in the
engine (GIL released) until completions or the next timer come due."""

from __future__ import annotations

import heapq
import itertools
import time
from collections import deque
from typing import TYPE_CHECKING, Any, Callable

from greenlet import GreenletExit, getcurrent, greenlet

if TYPE_CHECKING:
    from squall._engine import CompletionTuple, MqttOpTuple, RequestTuple, ScriptSession
    from squall.contrib.mqtt import MqttClient

    # A request as the engine takes it, without the id the hub gives it (see RequestTuple).
    RequestFields = tuple[int, str, str, list[tuple[str, str]], bytes, float, str, bool, bool]


class Hub:
    def __init__(self, session: ScriptSession) -> None:
        self.session = session
        self.main = getcurrent()
        self.ready: deque[tuple[greenlet, Any]] = deque()  # (greenlet, value to resume it with)
        self.timers: list[tuple[float, int, greenlet]] = []  # heap of (when, seq, greenlet)
        self.pending: dict[int, greenlet] = {}  # request id -> waiting greenlet
        self.outbox: list[RequestTuple] = []
        # MQTT operation id -> callback with its completion
        self.watchers: dict[int, Callable[[CompletionTuple], None]] = {}
        self.mqtt_outbox: list[MqttOpTuple] = []
        self.mqtt_clients: dict[int, MqttClient] = {}  # user id -> MqttClient, for messages on its subscriptions
        # ids of users that stopped, for the engine to close after their last operations
        self.closing: list[int] = []
        self.ids = itertools.count(1)
        self.seq = itertools.count()
        self.entered: float | None = None  # when the running greenlet got control; None while the hub runs

    def spawn(self, fn: Callable[..., object], *args: Any) -> greenlet:
        g = greenlet(lambda *_first_switch: fn(*args), parent=self.main)
        self.ready.append((g, None))
        return g

    def sleep(self, seconds: float) -> None:
        """Suspends the calling greenlet for `seconds` (0: lets the others run first)."""
        if seconds <= 0:
            self.ready.append((getcurrent(), None))
        else:
            heapq.heappush(self.timers, (time.monotonic() + seconds, next(self.seq), getcurrent()))
        self.main.switch()  # resumed with None when the time is up

    def request(self, fields: RequestFields) -> CompletionTuple:
        """Submits a request (the engine's tuple without its id) and suspends until it completes."""
        rid = next(self.ids)
        self.outbox.append((rid, *fields))
        self.pending[rid] = getcurrent()
        try:
            completion: CompletionTuple = self.main.switch()
            return completion
        finally:
            self.pending.pop(rid, None)  # killed while waiting: its completion will never come

    def mqtt(self, op_id: int, op: MqttOpTuple, on_done: Callable[[CompletionTuple], None] | None = None) -> None:
        """Queues an MQTT operation (the engine's tuple) without suspending; `on_done` gets its completion."""
        self.mqtt_outbox.append(op)
        if on_done is not None:
            self.watchers[op_id] = on_done

    def close_user(self, user_id: int) -> None:
        """The user stopped: the engine closes its connections and cancels what it still has in flight."""
        self.closing.append(user_id)
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
            # wait) runs again on the next pass, after the engine has had its operations.
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
            if self.outbox:
                self.session.submit(self.outbox)
                self.outbox = []
            if self.mqtt_outbox:
                self.session.submit_mqtt(self.mqtt_outbox)
                self.mqtt_outbox = []
            for user_id in self.closing:
                self.session.close_user(user_id)
            self.closing.clear()
            now = time.monotonic()
            while self.timers and self.timers[0][0] <= now:
                self.ready.append((heapq.heappop(self.timers)[2], None))
            if deadline is not None and now >= deadline:
                return
            if not self.ready and deadline is None and not self.pending and not self.timers and not self.watchers:
                return
            if self.ready and not self.mqtt_clients:
                continue  # HTTP users' completions wait for the next idle moment: fewer polls
            due = [t for t in (deadline, self.timers[0][0] if self.timers else None) if t is not None]
            wake = 0.0 if self.ready else max(0.0, min(due, default=now + 0.1) - now)
            self._dispatch(self.session.poll(wake))

    def _dispatch(self, completions: list[CompletionTuple]) -> None:
        for c in completions:
            g = self.pending.pop(c[0], None)
            if g is not None:
                self.ready.append((g, c))
            callback = self.watchers.pop(c[0], None)
            if callback is not None:
                callback(c)
        if self.mqtt_clients:
            for user, topic, payload, qos in self.session.messages():
                client = self.mqtt_clients.get(user)
                if client is not None:
                    client._deliver(topic, payload, qos)


class _Kill:
    """Marker: throw GreenletExit into the greenlet instead of resuming it."""

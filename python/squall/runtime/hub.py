"""The cooperative scheduler: one greenlet per user, on the same thread as the engine.

A greenlet's request goes straight into the engine (`ScriptEngine.submit`: a task is added to the
engine's local set; nothing is sent to another thread). The hub runs the greenlets that are ready, one
pass at a time; between passes it polls the engine once without waiting, so that responses are read and
timed while users keep working; when nothing is ready it waits in the engine (GIL released, one epoll
for sockets and the next timer) until completions arrive or the next greenlet timer falls due.

A greenlet waits in one place at a time, and exactly one thing resumes it: its completion, its timer,
or an exception thrown in (`kill`, `throw`: squall's gevent's Timeout). A greenlet thrown out of a wait
takes back what was still due to resume it there (its timer, its queued completion), so that nothing
resumes it later in a wait it has moved on to."""

from __future__ import annotations

import gc
import heapq
import sys
import time
from collections import deque
from collections.abc import Iterator
from operator import itemgetter
from typing import TYPE_CHECKING, Any, Callable, Protocol

from greenlet import GreenletExit, getcurrent, greenlet

# Greenlet timers (think times, sleeps) fire up to this late, so that the hub wakes once for all the
# timers of a millisecond instead of once for each: 1,000 users with between(0.1, 0.2) have a timer due
# every 150 µs, and each wake costs a poll of the engine (about half the CPU per request, measured).
# Never early: a sleep lasts at least what was asked, as time.sleep does.
TIMER_SLACK = 0.001
_TICKS = 1 / TIMER_SLACK  # timer buckets a second
# A timer set later than this (monotonic seconds: some 30 million years) is set for then: it never falls
# due, as gevent's never does for a wait of float("inf") (Locust's `wait_time = constant(float("inf"))`,
# a user that does its on_start and then sleeps until the test ends) or of 1e300 seconds, whose
# millisecond buckets would not be numbers (`int(inf)`: OverflowError). NaN too waits for ever.
_NEVER = 1e15


if TYPE_CHECKING:
    from squall._engine import Completion, Response, ScriptEngine

# A timer entry is [when, greenlet], a list so that a timer can be cancelled in place: its greenlet
# becomes this one, finished, which the hub skips as it skips any dead greenlet.
_CANCELLED = greenlet(lambda: None)
_CANCELLED.switch()

_current: Hub | None = None

# A wait switches to the hub's greenlet with greenlet's own switch: gevent's hub (squall.runtime.gevent_hub)
# overrides `switch` with bookkeeping of its own waits (a `switch_out` hook) that squall's waits need not
# pay, twice a request.
switch_greenlet: Callable[[greenlet], Any] = greenlet.switch


class MessageSink(Protocol):
    """Who takes the MQTT messages that arrive for a user's subscriptions (squall.contrib.mqtt's client)."""

    def _deliver(self, topic: str, payload: bytes, qos: int) -> None: ...


def current_hub() -> Hub | None:
    """The hub made last in this process (a run makes one), or None before the first: what squall's
    gevent schedules on, since a locustfile's `import gevent` cannot be handed the run's hub."""
    return _current


class Hub:
    def __init__(self, engine: ScriptEngine) -> None:
        global _current
        _current = self
        self.engine = engine
        self.main = getcurrent()  # the greenlet the hub runs in: waiting greenlets switch to it
        self.driver = self.main  # the run's driver (its loop, the listeners): `main` too unless gevent runs the hub
        self.ready: deque[tuple[greenlet, Any]] = deque()  # (greenlet, value to resume it with)
        self.timers = Timers()
        self.throws: dict[greenlet, BaseException] = {}  # what `throw` raises in a greenlet, once it runs
        self.pending: dict[int, greenlet] = {}  # operation id -> the greenlet waiting for its completion
        self.watchers: dict[int, Callable[[Completion], None]] = {}  # MQTT operation id -> callback
        self.mqtt_clients: dict[int, MessageSink] = {}  # user id -> its MQTT client, for messages
        self.entered: float | None = None  # when the running greenlet got control; None while the hub runs
        self.turns = 0  # greenlets resumed so far (`pause` tells from it whether a task gave way)
        self.on_arrivals: Callable[[list[float]], None] | None = None  # the open model's dispatch
        self.gevent: Any = None  # gevent's hub greenlet (squall.runtime.gevent_hub), where this hub runs (`use_gevent`)
        self.finished = False  # the engine's test is over (`finish`): nothing to poll until `use_engine`
        # The scripts' verdicts on responses (catch_response) since the last poll, which records them.
        self.verdicts: list[tuple[Response, str | None]] = []
        # Engines of past tests, held until this thread drops them (`use_engine`).
        self.retired: list[ScriptEngine] = []

    def spawn(self, fn: Callable[..., Any], *args: Any) -> greenlet:
        g = greenlet(lambda *_first_switch: fn(*args), parent=self.main)
        self.ready.append((g, None))
        return g

    def sleep(self, seconds: float) -> Any:
        """Suspends the calling greenlet for `seconds` (0: lets the others run first)."""
        g = getcurrent()
        if seconds <= 0:
            entry = (g, None)
            self.ready.append(entry)
            try:
                return switch_greenlet(self.main)
            except BaseException:
                self.unqueue(entry)  # thrown out first: this resumption must not come later
                raise
        timer = self.timers.add(time.monotonic() + seconds, g)
        try:
            return switch_greenlet(self.main)
        except BaseException:
            # Thrown out (killed, a Timeout): the timer must not resume it later, nor, if it fell due in
            # the same pass, the resumption it queued (it would switch into whatever the greenlet waits
            # on next, as an on_stop joining a thread: gevent's InvalidSwitchError). Only a timer that
            # fell due can have queued it: the queue is searched then alone. Searched for every user
            # thrown out at a test's end (all killed at once, each sleeping), it cost time quadratic in
            # the users: 10,000 users took 6 s to stop, spent scanning the other 9,999 kills queued.
            pending = self.timers.pending(timer)
            timer[1] = _CANCELLED
            if not pending:
                self.unqueue((g, None))
            raise

    def pause(self, seconds: float, seen: int) -> int:
        """The wait between two of a user's tasks: `sleep`, except that a wait of 0 does not go round
        through the hub when the task gave way itself (waited for its request) since the last pause:
        the others have had their turn then, and the round would only cost two greenlet switches and
        a pass (about 2 µs of a scripted request's 30, measured with cProfile). A task that never
        waits (an MQTT publish) still yields at every pause, as gevent.sleep(0) does in Locust.
        `seen` is what the greenlet's last pause returned (0 the first time)."""
        if not seconds <= 0 or self.turns == seen:  # (a NaN waits, for ever: `Timers.add`)
            self.sleep(seconds)
        return self.turns

    def judge(self, response: Response, failure: str | None) -> None:
        """The script's verdict on `response` (None: a success): recorded by the engine's next poll,
        in the same pass, not by a call of its own (one crossing into the engine a request, not two).
        After the test, nothing is recorded."""
        if not self.finished:
            self.verdicts.append((response, failure))

    def end_plans(self) -> None:
        """Ends the native users' plans (squall.user.native) at their next wait; their greenlets resume."""
        if not self.finished:
            self.engine.end_plans()

    def wait_for(self, op_id: int, abandoned: Callable[[Any], None] | None = None) -> Any:
        """Suspends the calling greenlet until operation `op_id` completes; returns its completion.
        Thrown out of the wait (killed, a Timeout), it calls `abandoned` if given: with None while the
        operation is still in progress, else with the completion it will not return (a received message
        the caller may keep for its next receive: squall.contrib.websocket_client)."""
        g = getcurrent()
        self.pending[op_id] = g
        try:
            return switch_greenlet(self.main)
        except BaseException:
            self.abandon(op_id, g, abandoned)
            raise

    def abandon(self, op_id: int, g: greenlet, abandoned: Callable[[Any], None] | None = None) -> None:
        """Greenlet `g` was thrown out of its wait for operation `op_id` (`wait_for`): the completion,
        when it comes, resumes no one. If it came already (dispatched, so no longer pending), its
        resumption is still queued: taken back. `abandoned` as `wait_for`'s."""
        if self.pending.pop(op_id, None) is None:
            queued = self.take_back(g)
            if queued is not None and abandoned is not None:
                abandoned(queued[1])
        elif abandoned is not None:
            abandoned(None)

    def wait_turn(self) -> Any:
        """Suspends the calling greenlet until something that recorded it resumes it (an MQTT message's
        acknowledgement, the open model's next arrival); returns the value it is resumed with. Thrown out
        (killed) after its resumption was queued, it takes that back (see `sleep`)."""
        g = getcurrent()
        try:
            return switch_greenlet(self.main)
        except BaseException:
            self.take_back(g)
            raise

    def call_later(self, seconds: float, fn: Callable[[], None]) -> list[Any]:
        """Calls `fn` in a greenlet of its own once `seconds` have passed (on a pass of the hub); returns
        the timer, for `cancel`. `fn` must not raise."""
        g = greenlet(lambda *_first_switch: fn(), parent=self.main)
        return self.timers.add(time.monotonic() + max(seconds, 0.0), g)

    def start_later(self, seconds: float, g: greenlet) -> list[Any]:
        """Switches to `g` (not started yet) once `seconds` have passed; returns the timer, for `cancel`."""
        return self.timers.add(time.monotonic() + max(seconds, 0.0), g)

    @staticmethod
    def cancel(timer: list[Any]) -> None:
        """The timer will not fire (a no-op if it has)."""
        timer[1] = _CANCELLED

    def throw(self, g: greenlet, exc: BaseException) -> None:
        """Raises `exc` in greenlet `g` where it waits, on the hub's next pass (a greenlet not started yet
        just ends, as `kill` ends it)."""
        if g.dead:
            return
        for dead in [k for k in self.throws if k.dead]:
            del self.throws[dead]
        started = g.gr_frame is not None or g is getcurrent()  # (one not started yet has no frame)
        self.throws[g] = exc if started else GreenletExit()  # anything else would reach the hub itself
        self.ready.append((g, _Kill))

    def cancel_throw(self, g: greenlet, exc: BaseException) -> None:
        """Takes back `throw(g, exc)` if it has not been raised yet."""
        if self.throws.get(g) is exc:
            del self.throws[g]
            self.unqueue((g, _Kill))

    def take_back(self, g: greenlet) -> tuple[greenlet, Any] | None:
        """Takes greenlet `g`'s queued resumption (a kill aside) back from the ready queue, for a greenlet
        thrown out of its wait after something queued it (`abandon`, `wait_turn`); returns it, or None."""
        queued = next((e for e in self.ready if e[0] is g and e[1] is not _Kill), None)
        if queued is not None:
            self.unqueue(queued)
        return queued

    def unqueue(self, entry: tuple[greenlet, Any]) -> None:
        """Takes a resumption (greenlet, value) back from the ready queue: the rare path of a greenlet
        thrown out of a wait after something had queued it to resume there."""
        for i, queued in enumerate(self.ready):
            if queued[0] is entry[0] and queued[1] is entry[1]:
                del self.ready[i]
                return

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
        """Runs everything that is due until the monotonic `deadline` (None: until nothing is left). With
        real gevent (`use_gevent`) the hub runs in gevent's hub greenlet: the caller waits there."""
        if self.gevent is not None:
            self._wait_until(deadline)
            return
        while True:
            first = self._pass()
            now = time.monotonic()
            if deadline is not None and now >= deadline:
                return
            if not self.ready and deadline is None and not self.pending and first is None and not self.watchers:
                return
            if self.ready:
                wake = 0.0
            else:
                until = first if deadline is None or (first is not None and first < deadline) else deadline
                wake = 0.1 if until is None else until - now if until > now else 0.0
            self._wait(wake)

    def run_while(self, busy: Callable[[], bool], until: float, every: float) -> None:
        """Runs the hub while `busy()` holds, up to the monotonic `until`, looking every `every` seconds
        (the end of a run waiting for its users and iterations to finish)."""
        while busy() and time.monotonic() < until:
            self.run_until(min(until, time.monotonic() + every))

    def _pass(self) -> float | None:
        """One pass: the timers due now join the ready, then every greenlet ready at its start runs once
        (one that only yields, as an MQTT publisher with no wait, runs again on the next pass, after the
        engine has had a turn); returns when the next timer is due (None: no timer).

        Timers join before the pass, not after it: with think time, the users whose responses came and
        those whose think time ended in the same millisecond run in one pass, and their requests go out
        in one poll of the engine. Joined after the pass, they ran in a pass of their own, behind a poll
        that had nothing to send (the users woken by responses only go back to sleep): two polls a
        millisecond where one does (1,000 users `between(0.1, 0.2)`: 0.36 polls a request, 12,898 in 6 s)."""
        timers = self.timers
        first = timers.next_due()
        if first is not None and first <= time.monotonic():
            self.ready.extend((timer[1], None) for timer in timers.pop_due(time.monotonic()))
        ready, monotonic = self.ready, time.monotonic
        for _ in range(len(ready)):
            if not ready:  # a greenlet thrown out of a wait took back its queued resumption (`unqueue`)
                break
            g, value = ready.popleft()
            if g.dead:
                continue
            self.entered = monotonic()
            self.turns += 1
            if value is _Kill:
                g.throw(self.throws.pop(g, GreenletExit) if self.throws else GreenletExit)
            else:
                g.switch(value)
            self.entered = None
        return timers.next_due()

    def _wait(self, wake: float) -> None:
        """Waits in the engine up to `wake` seconds for completions (and arrivals), and dispatches them;
        between a test's end and the next test's engine (`finish`, `use_engine`), only waits."""
        if self.finished:
            _monotonic_sleep(wake)
            return
        verdicts = self.verdicts
        if verdicts:
            self.verdicts = []
        # The completions someone waits for are queued on `ready` by the poll itself; the rest come back.
        rest = self.engine.poll(wake, verdicts, self.pending, self.ready)
        if rest or self.mqtt_clients:
            self._dispatch(rest)
        if self.on_arrivals is not None:
            arrivals = self.engine.arrivals()
            if arrivals:
                self.on_arrivals(arrivals)

    def finish(self, reason: str, url: str) -> dict[str, Any]:
        """The test is over: the engine's result (the engine is done with; the hub may still run)."""
        self.finished = True
        verdicts, self.verdicts = self.verdicts, []
        self.engine.judge(verdicts)
        result: dict[str, Any] = self.engine.finish(reason, url)
        return result

    def use_engine(self, engine: ScriptEngine) -> None:
        """The next test's engine (a test started from the dashboard gets a new one).

        The last one must be dropped on this thread: an engine is bound to the thread that made it, and
        one dropped elsewhere is leaked with an error on stderr. The past test's users, sessions and
        greenlets hold it in reference cycles, which the garbage collector frees in whichever thread
        it runs when it runs (the dashboard's thread, serving a page, say). So the hub holds past
        engines itself, collects those cycles here, and drops each engine nothing else holds any more;
        one still held (by something the test left alive) waits for the next test's start."""
        self.retired.append(self.engine)
        self.engine = engine
        self.finished = False
        self.verdicts = []
        gc.collect()
        # Held by the list, the loop's name and getrefcount's argument, nothing else: dropped here.
        self.retired = [e for e in self.retired if sys.getrefcount(e) > 3]

    def use_gevent(self, gevent_hub: Any) -> None:
        """Real gevent (squall.runtime.gevent_hub): this hub runs in gevent's hub greenlet (`serve`), which every
        greenlet switches to when it waits, on squall's queues or on gevent's."""
        self.gevent = gevent_hub
        self.main = gevent_hub

    def leave_gevent(self) -> None:
        """The run is over: this hub runs in its caller again (`run_until`), as without gevent."""
        self.gevent = None
        self.main = getcurrent()

    def serve(self, gevent_hub: Any) -> None:
        """gevent's hub loop while a run is bound to it (squall.runtime.gevent_hub): the passes of `run_until`
        for good, gevent's loop run without blocking in each while it has watchers, and the wait in the
        engine held to TIMER_SLACK meanwhile (the engine cannot see gevent's epoll). Returns once
        unbound."""
        loop = gevent_hub.loop
        loop.error_handler = gevent_hub
        try:
            while gevent_hub.squall is self:
                first = self._pass()
                if gevent_hub.squall is not self:
                    break  # unbound in the pass (the driver's `unbind` waits for it): not a 0.1 s wait more
                gevent_busy = loop.activecnt
                if gevent_busy:
                    loop.run(nowait=True)  # its ready callbacks and watchers: they resume its greenlets
                now = time.monotonic()
                if self.ready:
                    wake = 0.0
                else:
                    wake = 0.1 if first is None else max(0.0, first - now)
                    if gevent_busy and wake > TIMER_SLACK:
                        wake = TIMER_SLACK
                self._wait(wake)
        finally:
            loop.error_handler = None

    def _wait_until(self, deadline: float | None) -> None:
        """With gevent: the calling greenlet (the run's driver) sleeps on a timer while the hub greenlet
        runs; with no deadline, until nothing is left to run."""
        g = getcurrent()
        while True:
            until = deadline if deadline is not None else time.monotonic() + 0.05
            timer = self.timers.add(until, g)
            try:
                switch_greenlet(self.main)
            except BaseException:
                timer[1] = _CANCELLED
                raise
            if deadline is not None:
                return
            if not self.ready and not self.pending and not self.watchers and not self.timers:
                return

    def _dispatch(self, completions: list[Any]) -> None:
        """The completions no greenlet waits for (`poll` queued those) go to their watchers, and the MQTT
        messages that came to their users' clients."""
        watchers = self.watchers
        if watchers:  # (an operation is waited for or watched, never both: `wait_for`, `watch`)
            for c in completions:
                callback = watchers.pop(c.id, None)
                if callback is not None:
                    callback(c)
        if self.mqtt_clients:
            for m in self.engine.messages():
                client = self.mqtt_clients.get(m.user)
                if client is not None:
                    client._deliver(m.topic, m.payload, m.qos)


class Timers:
    """The hub's greenlet timers, in buckets of TIMER_SLACK: a timer falls in the first bucket that
    ends at or after its time, and a bucket's timers are due together when it ends (never early, at
    most TIMER_SLACK late). A heap orders the buckets, not the timers: its keys are ints, and one push
    serves all the timers of a millisecond. A heap of [when, seq, greenlet] lists spent about 4% of a
    think-time run's CPU comparing lists (list_richcompare, siftup, float_richcompare under perf)."""

    __slots__ = ("buckets", "order")

    def __init__(self) -> None:
        self.buckets: dict[int, list[list[Any]]] = {}  # bucket number -> its timers, [when, greenlet]
        self.order: list[int] = []  # heap of the bucket numbers

    def add(self, when: float, g: greenlet) -> list[Any]:
        """A timer for `g` at monotonic time `when` (at most _NEVER); returns it (for `Hub.cancel`)."""
        if not when < _NEVER:  # (NaN too)
            when = _NEVER
        timer = [when, g]
        number = int(when * _TICKS) + 1
        bucket = self.buckets.get(number)
        if bucket is None:
            self.buckets[number] = [timer]
            heapq.heappush(self.order, number)
        else:
            bucket.append(timer)
        return timer

    def pending(self, timer: list[Any]) -> bool:
        """Whether `timer` has yet to fall due: it is still in its bucket (taken whole when due)."""
        bucket = self.buckets.get(int(timer[0] * _TICKS) + 1)
        return bucket is not None and any(t is timer for t in bucket)

    def next_due(self) -> float | None:
        """When the first bucket is due (None: no timer)."""
        return self.order[0] / _TICKS if self.order else None

    def pop_due(self, now: float) -> list[list[Any]]:
        """Takes the timers of every bucket due by `now`, in the order of their times."""
        due: list[list[Any]] = []
        order, limit = self.order, now * _TICKS
        while order and order[0] <= limit:
            bucket = self.buckets.pop(heapq.heappop(order))
            if len(bucket) > 1:
                bucket.sort(key=_WHEN)
            due += bucket
        return due

    def __iter__(self) -> Iterator[list[Any]]:
        return (timer for bucket in self.buckets.values() for timer in bucket)

    def __bool__(self) -> bool:
        return bool(self.order)


_WHEN = itemgetter(0)  # a timer's time
_monotonic_sleep = time.sleep  # the standard library's, bound before any patching (squall.runtime.gevent_hub)


class _Kill:
    """Marker: throw GreenletExit into the greenlet instead of resuming it."""

"""Starting and stopping users toward a target count at a spawn rate, keeping the classes' weights."""

from __future__ import annotations

import time
from collections import deque
from typing import TYPE_CHECKING

from squall.exception import user_traceback

if TYPE_CHECKING:
    from greenlet import greenlet

    from squall.env import Environment
    from squall.user.users import User


# Above 1/SPAWN_TICK users a second, users start in groups, those due in the last SPAWN_TICK together,
# each at most that late: one wake-up of the run (and of the target, for their connections and first
# requests) a group instead of one a user. Starting 1,000 users at -r 1000 one by one cost 0.2 CPU-s
# more than starting them at once (wait4, users that then wait; perf: the kernel's wake-ups of the
# target and of squall); in groups of 5, 0.05-0.07 more. A group is made in about 0.1-0.2 ms (20-40
# µs a user), within what one pass of the hub may hold (see Spawner).
SPAWN_TICK = 0.005


class Spawner:
    """Starts and stops users toward a target count at a spawn rate, keeping the classes' weights.
    A user that stops by itself (StopUser, or an exception in on_start) still counts as spawned and
    is not replaced, as in Locust.

    Users are made one after another in a greenlet of their own (`_make`), as Locust's spawning greenlet
    makes them: a User whose `__init__` takes its time (a `time.sleep`, a blocking call made
    cooperative) delays the next user's start, as in Locust, while the users already started, the
    dashboard and Ctrl-C go on. They start 1/rate apart, as Locust's do (it sleeps 1/rate between
    two; above 200 a second, in groups of those due within 5 ms, `SPAWN_TICK`), not in the run loop's
    bursts: `step` runs every 0.1 s and lets rate/10 users through at once,
    and making 20 in one pass (-r 200) held the hub for 0.85 ms, in which the responses of the users
    already running waited unread (timed late by that much when their reads are not stamped yet,
    tests/test_ground_truth.py, measured)."""

    def __init__(self, env: Environment, classes: list[type[User]]) -> None:
        self.env = env
        self.classes = classes
        self.counts = {c: 0 for c in classes}
        self.spawned: list[tuple[User, greenlet]] = []  # in the order they started
        self.waiting: deque[type[User]] = deque()  # users to make, in order (`_make`)
        self.making: type[User] | None = None  # the class of the user being made now
        self.maker: greenlet | None = None
        self.target = 0
        self.rate = 1.0
        self.credit = 1.0  # the first user starts at once, as in Locust; then `rate` a second
        self.last = time.monotonic()
        self.next_due = 0.0  # when `_make` may start the next user (monotonic seconds)

    def set_target(self, users: int, rate: float, classes: list[type[User]] | None = None) -> None:
        self.target, self.rate = int(users), float(rate)
        self.env.runner.target_user_count = self.target  # Locust's runner.start() sets it so
        if classes:
            self.classes = classes
            for c in classes:
                self.counts.setdefault(c, 0)

    def _next_class(self) -> type[User]:
        fixed = [c for c in self.classes if c.fixed_count and self.counts[c] < c.fixed_count]
        if fixed:
            return fixed[0]
        weighted = [c for c in self.classes if not c.fixed_count]
        total_weight = sum(c.weight for c in weighted) or 1
        n = sum(self.counts[c] for c in weighted) + 1
        return max(weighted, key=lambda c: c.weight / total_weight * n - self.counts[c])

    def spawn_one(self) -> User:
        """Makes and starts one user of the class the weights call for next, at once (the open model's
        users, started for an arrival)."""
        cls = self._next_class()
        self.counts[cls] += 1
        return self._start(cls(self.env))

    def _start(self, u: User) -> User:
        g = u.hub.spawn(u.run)  # the environment's hub
        g.squall_user = True  # type: ignore[attr-defined]  # what it spawns is the user's (gevent_hub.user_spawned)
        g.squall_user_id = u.user_id  # type: ignore[attr-defined]  # whose connections (contrib.websocket_client)
        g.args = (u,)  # type: ignore[attr-defined]  # as a Locust user's greenlet: files find its user there
        self.env.runner.users[u] = g
        self.spawned.append((u, g))
        return u

    @property
    def started(self) -> int:
        """Users started, being made or waiting to be: what the target is compared with."""
        return len(self.spawned) + len(self.waiting) + (self.making is not None)

    def _make(self) -> None:
        """The spawning greenlet: makes the waiting users one after another, 1/rate apart (catching up
        without waiting when it is behind), then ends."""
        hub = self.env.hub
        assert hub is not None
        self.next_due = max(self.next_due, time.monotonic())
        while self.waiting:
            wait = self.next_due - time.monotonic()
            if wait > 0:
                hub.sleep(max(wait, SPAWN_TICK))  # (the users due meanwhile then start together)
                if not self.waiting:
                    break  # stopped meanwhile (a lower target, the end)
            self.next_due += 1.0 / self.rate if self.rate > 0 else 0.0
            cls = self.making = self.waiting.popleft()
            try:
                user = cls(self.env)
            except Exception as e:  # that user's error, as Locust's spawning greenlet logs it
                self.counts[cls] -= 1
                self.env.report_exception(None, e, user_traceback(e))
                continue
            finally:
                self.making = None
            self._start(user)

    def step(self) -> None:
        now = time.monotonic()
        self.credit = min(self.credit + (now - self.last) * self.rate, max(self.rate, 1.0))
        self.last = now
        runner = self.env.runner
        hub = self.env.hub
        assert hub is not None
        while self.started < self.target and self.credit >= 1.0:
            cls = self._next_class()
            self.counts[cls] += 1
            self.waiting.append(cls)
            self.credit -= 1.0
        if self.waiting and (self.maker is None or self.maker.dead):
            self.maker = hub.spawn(self._make)
        while self.started > self.target and self.credit >= 1.0:  # stopped at the rate too, as in Locust
            if self.waiting:  # not made yet: it never starts
                self.counts[self.waiting.pop()] -= 1
            elif len(self.spawned) > self.target:
                u, g = self.spawned.pop()
                runner.users.pop(u, None)
                self.counts[type(u)] -= 1
                u.hub.kill(g)
            else:
                break  # the one being made finishes, then the next step stops it
            self.credit -= 1.0

    def halt(self) -> None:
        """The run ends: no more users are made (one being made is ended where it waits)."""
        self.waiting.clear()
        if self.maker is not None and not self.maker.dead and self.env.hub is not None:
            self.env.hub.kill(self.maker)

    def done(self) -> bool:
        """Every user was started and all have stopped by themselves."""
        return len(self.spawned) >= self.target > 0 and not self.env.runner.users and self.started <= len(self.spawned)

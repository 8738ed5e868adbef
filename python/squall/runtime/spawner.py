"""Starting and stopping users toward a target count at a spawn rate, keeping the classes' weights."""

from __future__ import annotations

import heapq
import math
import time
from collections import deque
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, TypeVar

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

T = TypeVar("T")


def by_name(classes: Iterable[type[User]]) -> list[type[User]]:
    """User classes in the order Locust's dispatcher takes them: by name."""
    return sorted(classes, key=lambda c: c.__name__)


def weighted_draw(items: list[tuple[T, float]]) -> Iterator[T | None]:
    """An endless draw among `items` ((item, weight), weights > 0 only) in which each next item is the
    one whose pick lowers the Kullback-Leibler divergence between the picks' shares and the weights the
    most (ties: the lower weight plus picks, then the lighter, then the earlier name), as Locust's
    dispatcher draws User classes: weights 5 and 1 give AABAAAAABAAA. Nothing to draw from: None, for
    ever."""
    kept = [(item, w) for item, w in items if w > 0]
    if not kept:
        while True:
            yield None
    # Per item, ordered as picked: (the divergence its next pick changes, x, weight, name, its index),
    # with x its weight plus its picks plus 1; a pick changes the divergence by weight * log2(x / (x + 1)).
    # A heap: a run of many User classes and users draws in O(log classes) a user.
    queue = [(w * math.log2(w / (w + 1.0)), w + 1.0, w, getattr(item, "__name__", str(item)), i)
             for i, (item, w) in enumerate(kept)]  # fmt: skip
    heapq.heapify(queue)
    while True:
        _gain, x, w, name, i = queue[0]
        yield kept[i][0]
        heapq.heapreplace(queue, (w * math.log2(x / (x + 1.0)), x + 1.0, w, name, i))


class Spawner:
    """Starts and stops users toward a target count at a spawn rate, keeping the classes' weights.
    A user that stops by itself (StopUser, or an exception in on_start) still counts as spawned and
    is not replaced, as in Locust.

    Users are made one after another in a greenlet of their own (`_make`), as Locust's spawning greenlet
    makes them: a User whose `__init__` takes its time (a `time.sleep`, a blocking call made
    cooperative) delays the next user's start, as in Locust, while the users already started, the
    dashboard and Ctrl-C go on. They start 1/rate apart (above 200 a second, in groups of those due within 5 ms,
    `SPAWN_TICK`), as Locust 1 started them (Locust 2.47 starts floor(rate) at once every second:
    docs/locustfiles.md), not in the run loop's bursts: `step` runs every 0.1 s and lets rate/10 users through
    at once, and making 20 in one pass (-r 200) held the hub for 0.85 ms, in which the responses of the users
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
        # Which class each next user is: Locust's dispatch (`choices`). `check_fixed`: the fixed_count
        # classes' missing users come next (at the start, and after any user was stopped); `short`: no
        # class had a user to give (only fixed_count classes, all there), so the target cannot be met.
        self.check_fixed = True
        self.short = False
        self.order = self._choices()

    def set_target(self, users: int, rate: float, classes: list[type[User]] | None = None) -> None:
        """The users to run (`classes`: from now on only these, as a shape's tick names them: the users of
        other classes already running stay, until a lower target stops them, newest first)."""
        self.target, self.rate = int(users), float(rate)
        self.short = False
        self.env.runner.target_user_count = self.target  # Locust's runner.start() sets it so
        if classes:
            for c in classes:
                self.counts.setdefault(c, 0)
            if by_name(classes) != by_name(self.classes):  # as Locust's dispatcher, a new draw then
                self.classes = classes
                self.order = self._choices()

    def _choices(self) -> Iterator[type[User] | None]:
        """The classes of the users to start, one after another, as Locust's UsersDispatcher draws them
        (locust/dispatch.py, 2.47): when `check_fixed` is set, the users the fixed_count classes miss (as
        `counts` has them: the users started, being made and waiting), drawn among those classes by
        what each misses, all of them before anything else; otherwise the weighted classes (weight > 0, no
        fixed_count) in the order that keeps their shares closest to their weights (`weighted_draw`);
        None when there is none. The draw goes on across targets, as Locust's does: stopping users does
        not rewind it."""
        classes = by_name(self.classes)
        weighted = weighted_draw([(c, float(c.weight)) for c in classes if not c.fixed_count])
        while True:
            if self.check_fixed:
                self.check_fixed = False
                missing = [(c, float(c.fixed_count - self.counts.get(c, 0))) for c in classes if c.fixed_count]
                missing = [(c, n) for c, n in missing if n > 0]
                fixed = weighted_draw(missing)
                for _ in range(int(sum(n for _c, n in missing))):
                    yield next(fixed)
            else:
                yield next(weighted)

    def spawn_one(self) -> User | None:
        """Makes and starts one user of the class the draw calls for next, at once (the open model's
        users, started for an arrival); None if no class has a user to give."""
        cls = next(self.order)
        if cls is None:
            return None
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
        while self.started < self.target and self.credit >= 1.0 and not self.short:
            cls = next(self.order)
            if cls is None:  # Locust's dispatch ends there, its spawning complete
                self.short = True
                break
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
            self.check_fixed = True  # a fixed_count class may miss a user now (Locust's dispatch)
            self.credit -= 1.0

    def halt(self) -> None:
        """The run ends: no more users are made (one being made is ended where it waits)."""
        self.waiting.clear()
        if self.maker is not None and not self.maker.dead and self.env.hub is not None:
            self.env.hub.kill(self.maker)

    def settled(self) -> bool:
        """The target is met: every user it asks for started (or none was left to give: `short`) or every
        user over it stopped; none waits or is being made. Locust's spawning is complete then."""
        if self.waiting or self.making is not None:
            return False
        return len(self.spawned) == self.target or (self.short and len(self.spawned) < self.target)

    def done(self) -> bool:
        """Every user was started and all have stopped by themselves."""
        return len(self.spawned) >= self.target > 0 and not self.env.runner.users and self.started <= len(self.spawned)

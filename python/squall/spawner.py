"""Starting and stopping users toward a target count at a spawn rate, keeping the classes' weights."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from greenlet import greenlet

    from squall.env import Environment
    from squall.user.users import User


class Spawner:
    """Starts and stops users toward a target count at a spawn rate, keeping the classes' weights.
    A user that stops by itself (StopUser, or an exception in on_start) still counts as spawned and
    is not replaced, as in Locust."""

    def __init__(self, env: Environment, classes: list[type[User]]) -> None:
        self.env = env
        self.classes = classes
        self.counts = {c: 0 for c in classes}
        self.spawned: list[tuple[User, greenlet]] = []  # in the order they started
        self.target = 0
        self.rate = 1.0
        self.credit = 1.0  # the first user starts at once, as in Locust; then `rate` a second
        self.last = time.monotonic()

    def set_target(self, users: int, rate: float, classes: list[type[User]] | None = None) -> None:
        self.target, self.rate = int(users), float(rate)
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
        """Starts one user of the class the weights call for next."""
        cls = self._next_class()
        u = cls(self.env)
        g = u.hub.spawn(u.run)  # the environment's hub
        self.env.runner.users[u] = g
        self.spawned.append((u, g))
        self.counts[cls] += 1
        return u

    def step(self) -> None:
        now = time.monotonic()
        self.credit = min(self.credit + (now - self.last) * self.rate, max(self.rate, 1.0))
        self.last = now
        runner = self.env.runner
        while len(self.spawned) < self.target and self.credit >= 1.0:
            self.spawn_one()
            self.credit -= 1.0
        while len(self.spawned) > self.target and self.credit >= 1.0:  # stopped at the rate too, as in Locust
            u, g = self.spawned.pop()
            runner.users.pop(u, None)
            self.counts[type(u)] -= 1
            u.hub.kill(g)
            self.credit -= 1.0

    def done(self) -> bool:
        """Every user was started and all have stopped by themselves."""
        return len(self.spawned) >= self.target > 0 and not self.env.runner.users

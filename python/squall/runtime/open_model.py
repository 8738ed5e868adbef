"""The open model for locustfiles (`squall -f FILE --rate R`), which Locust lacks (locustio/locust#646):
task iterations start as arrivals at R per second, whatever the server does, instead of users looping
with their `wait_time`. The engine's precise clock issues the arrivals; each goes to an idle user (the
most recently idle, as a connection pool would), and users are started as arrivals need them, up to
`-u`. An arrival no user can take waits for the next one to be free: it starts late, and its lateness
is part of the latency of its first request, which the engine counts from the iteration's intended
start. Arrivals still waiting when the run ends were never started: they are reported as dropped.

One arrival runs one task (a TaskSet task runs until it interrupts, each of its own tasks taking one
arrival); `wait_time` is not used."""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING

from greenlet import getcurrent

from squall.exception import StopUser

if TYPE_CHECKING:
    from greenlet import greenlet

    from squall.env import Environment
    from squall.runtime.spawner import Spawner
    from squall.user.users import User


class OpenPool:
    def __init__(self, env: Environment, spawner: Spawner, cap: int) -> None:
        self.env = env
        self.spawner = spawner
        self.cap = cap
        self.idle: list[tuple[User, greenlet]] = []  # waiting for an arrival, most recently idle last
        self.backlog: deque[float] = deque()  # arrivals that found no free user, oldest first
        self.first: dict[int, float] = {}  # user id -> the arrival it was started for

    def dispatch(self, arrivals: list[float]) -> None:
        """Hands each arrival (its intended time) to an idle user, a new one, or the backlog."""
        hub = self.env.hub
        assert hub is not None
        for t in arrivals:
            while self.idle:
                _, g = self.idle.pop()
                if not g.dead:
                    hub.ready.append((g, t))
                    break
            else:
                user = self.spawner.spawn_one() if self.env.runner.user_count < self.cap else None
                if user is not None:
                    self.first[user.user_id] = t
                else:  # (at the cap, or no class has a user to give: only fixed_count classes, all there)
                    self.backlog.append(t)

    def first_iteration(self, user: User) -> None:
        """A new user starts the iteration of the arrival it was started for."""
        t = self.first.pop(user.user_id, None)
        if t is not None:
            user.hub.engine.begin_iteration(user.user_id, t)

    def next_iteration(self, user: User) -> None:
        """Between tasks: the user waits for its next arrival (or takes the oldest waiting one)."""
        if self.env.runner.stopping:
            raise StopUser()
        if self.backlog:
            t = self.backlog.popleft()
        else:
            self.idle.append((user, getcurrent()))
            t = user.hub.wait_turn()
        user.hub.engine.begin_iteration(user.user_id, t)

    def all_idle(self) -> bool:
        """No iteration is running and none is waiting."""
        alive = sum(1 for _, g in self.idle if not g.dead)
        return not self.backlog and alive >= self.env.runner.user_count

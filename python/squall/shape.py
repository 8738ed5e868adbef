"""`LoadTestShape`: a class whose `tick()` sets the user count (and spawn rate) as the test goes."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from squall.runners import Runner
    from squall.user.users import User

    # (users, spawn rate), or (users, spawn rate, the User classes to run from now on); {"rate": R} for the
    # open model (task iterations starting at R a second); None ends the test.
    Tick = tuple[int, float] | tuple[int, float, list[type[User]] | None] | dict[str, float] | None


class LoadTestShape:
    """Subclass it in a locustfile; `tick()` returns `(users, spawn_rate)`, `(users, spawn_rate,
    user_classes)`, `{"rate": R}` (squall's open model: task iterations start at R a second, `-u` users
    at most), or None to end the test. Called about once a second."""

    abstract = True
    runner: Runner | None = None

    def __init__(self) -> None:
        self.start_time = time.monotonic()

    def reset_time(self) -> None:
        self.start_time = time.monotonic()

    def get_run_time(self) -> float:
        return time.monotonic() - self.start_time

    def get_current_user_count(self) -> int:
        return self.runner.user_count if self.runner else 0

    def tick(self) -> Tick:
        raise NotImplementedError("a LoadTestShape needs a tick() method")

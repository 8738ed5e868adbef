"""The runner a locustfile sees (`self.environment.runner`, `locust.runners`): `quit()`, `user_count`,
`state`. squall runs one process, so its runner is always a `LocalRunner`; `MasterRunner` and
`WorkerRunner` exist so that locustfiles' isinstance checks work."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from greenlet import greenlet

    from squall.env import Environment
    from squall.user.users import User


class Runner:
    """What locustfiles use of Locust's runner: `quit()`, `user_count`, `state`."""

    def __init__(self, environment: Environment) -> None:
        self.environment = environment
        self.users: dict[User, greenlet] = {}  # the running users and their greenlets
        self.state = "ready"  # then spawning, running, stopping, stopped
        self.quitting = False
        # Set at the end of a run with --stop-timeout: users stop at their next wait, after their task.
        self.stopping = False
        self.target_user_count = 0

    @property
    def user_count(self) -> int:
        return len(self.users)

    def quit(self) -> None:
        self.quitting = True

    def stop(self) -> None:
        self.quitting = True


class LocalRunner(Runner):
    """The runner of a squall run."""


class MasterRunner(Runner):
    """Never squall's runner: for locustfiles' `isinstance(runner, MasterRunner)` checks."""


class WorkerRunner(Runner):
    """Never squall's runner: for locustfiles' `isinstance(runner, WorkerRunner)` checks."""

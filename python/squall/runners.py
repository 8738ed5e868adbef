"""The runner a locustfile sees (`self.environment.runner`, `locust.runners`): `quit()`, `user_count`,
`state` (with Locust's `STATE_*` values), `stats`, custom messages. squall runs one process, so its
runner is always a `LocalRunner`; `MasterRunner` and `WorkerRunner` exist so that locustfiles'
isinstance checks work.

Custom messages (`register_message`, `send_message`) are delivered as Locust's LocalRunner delivers
them: at once, in the sender's greenlet, to the one listener of the type, called with
`environment=` and `msg=` (a `Message` from node "local"); `concurrent` changes nothing locally, as in
Locust. An unknown type is a warning, not an error."""

from __future__ import annotations

import logging
import socket
import uuid
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from greenlet import greenlet

    from squall.env import Environment
    from squall.stats import RequestStats, StatsError
    from squall.user.users import User

STATE_INIT, STATE_SPAWNING, STATE_RUNNING, STATE_CLEANUP, STATE_STOPPING, STATE_STOPPED, STATE_MISSING = [
    "ready",
    "spawning",
    "running",
    "cleanup",
    "stopping",
    "stopped",
    "missing",
]

logger = logging.getLogger("locust.runners")  # Locust's logger name, for files that configure it


class Message:
    """A message between runners (`locust.rpc.Message`): its type, data and sending node."""

    def __init__(self, message_type: str, data: Any, node_id: str | None) -> None:
        self.type = message_type
        self.data = data
        self.node_id = node_id

    def __repr__(self) -> str:
        return f"<Message {self.type}:{self.node_id}>"


class Runner:
    """What locustfiles use of Locust's runner: `quit()`, `user_count`, `state`, `stats`, messages."""

    def __init__(self, environment: Environment) -> None:
        self.environment = environment
        self.users: dict[User, greenlet] = {}  # the running users and their greenlets
        self.state = STATE_INIT  # then spawning, running, stopping, stopped
        self.quitting = False
        # Set at the end of a run with --stop-timeout: users stop at their next wait, after their task.
        self.stopping = False
        self.target_user_count = 0
        self.custom_messages: dict[str, tuple[Callable[..., Any], bool]] = {}

    @property
    def user_count(self) -> int:
        return len(self.users)

    @property
    def user_classes_count(self) -> dict[str, int]:
        """The running users by class name (every class of the run, 0 if none runs)."""
        counts = {c.__name__: 0 for c in self.environment.user_classes}
        for user in self.users:
            name = type(user).__name__
            counts[name] = counts.get(name, 0) + 1
        return counts

    @property
    def stats(self) -> RequestStats:
        return self.environment.stats

    @property
    def errors(self) -> dict[str, StatsError]:
        return self.stats.errors

    def quit(self) -> None:
        self.quitting = True

    def stop(self) -> None:
        self.quitting = True

    def register_message(self, msg_type: str, listener: Callable[..., Any], concurrent: bool = False) -> None:
        """The listener of custom messages of `msg_type` (one per type, as in Locust)."""
        if msg_type in self.custom_messages:
            raise Exception(f"Tried to register listener method for {msg_type}, but it already had a listener!")
        self.custom_messages[msg_type] = (listener, concurrent)

    def send_message(self, msg_type: str, data: Any = None, client_id: str | None = None) -> None:
        """Delivers a custom message to this process's listener of its type (see the module's doc)."""
        if msg_type in self.custom_messages:
            listener, _concurrent = self.custom_messages[msg_type]
            listener(environment=self.environment, msg=Message(msg_type, data, "local"))
        else:
            logger.warning(f"Unknown message type received: {msg_type}")


class LocalRunner(Runner):
    """The runner of a squall run."""

    def __init__(self, environment: Environment) -> None:
        super().__init__(environment)
        # As Locust's LocalRunner: so that files written for distributed runs work in one process.
        self.worker_index = 0
        self.worker_count = 1
        self.client_id = f"{socket.gethostname()}_{uuid.uuid4().hex}"


class MasterRunner(Runner):
    """Never squall's runner: for locustfiles' `isinstance(runner, MasterRunner)` checks."""


class WorkerRunner(Runner):
    """Never squall's runner: for locustfiles' `isinstance(runner, WorkerRunner)` checks."""

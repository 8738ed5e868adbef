"""The runner a locustfile sees (`self.environment.runner`, `locust.runners`): `quit()`, `user_count`,
`state` (with Locust's `STATE_*` values), `stats`, custom messages.

Which runner, as Locust decides it: a run in one process has a `LocalRunner`; the driver of a
distributed run (`--ray`, `--master`) has a `MasterRunner`, and each of its workers (a process with a
share of the users) a `WorkerRunner` with its `worker_index` and `worker_count`. `--processes`
workers have a `WorkerRunner` too; their parent fires no events (Locust's `--processes` master does).

Custom messages (`register_message`, `send_message`), as Locust delivers them:
- locally (`LocalRunner`): at once, in the sender's greenlet, to the one listener of the type, called
  with `environment=` and `msg=` (a `Message` from node "local"); `concurrent` changes nothing.
- worker to master: the worker's feed carries them (squall.distributed.feed), with its
  `report_to_master` data, once a second; the master's listener gets `msg.node_id` = the worker's
  `client_id`, and `worker_report` fires with the data.
- master to workers (all, or the one `client_id` names): through each worker's actor to its process,
  delivered in a greenlet of its own by the worker's run loop (within 0.1 s of arriving).
An unknown type is a warning, not an error."""

from __future__ import annotations

import json
import logging
import os
import queue
import socket
import sys
import uuid
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Callable, TypedDict

from greenlet import GreenletExit, getcurrent

from squall.runtime.gevent_hub import NativeThread

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


class ExceptionDict(TypedDict):
    """One of Locust's `runner.exceptions`: how often, its message, traceback and the nodes it came from."""

    count: int
    msg: str
    traceback: str
    nodes: set[str]


class Group:
    """Locust's `runner.user_greenlets` (a gevent Group there; named alike) as files use it: its length, iteration
    over the running users' greenlets (each with Locust's `args`, `(user,)`), `in`, `greenlets`. A view
    of the runner's users, not a copy."""

    def __init__(self, users: dict[User, greenlet]) -> None:
        self._users = users

    def __len__(self) -> int:
        return len(self._users)

    def __iter__(self) -> Iterator[greenlet]:
        return iter(list(self._users.values()))

    def __contains__(self, g: object) -> bool:
        return any(x is g for x in self._users.values())

    @property
    def greenlets(self) -> set[greenlet]:
        return set(self._users.values())


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
        self.stop_asked = False  # `stop()` was called: the test ends, the run waits for -t (`quit`: ends too)
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

    @property
    def user_greenlets(self) -> Group:
        return Group(self.users)

    @property
    def exceptions(self) -> dict[int, ExceptionDict]:
        """Locust's exceptions of the test, keyed by the hash of their traceback: `count`, `msg`,
        `traceback`, `nodes`. Made when read from the environment's (`Environment.exceptions`, what the
        outputs write): one record, never two that could drift."""
        rows: dict[int, ExceptionDict] = {}
        for entry in self.environment.exceptions.values():
            key = hash(entry["traceback"])
            row = rows.get(key)
            if row is None:
                rows[key] = {"count": entry["count"], "msg": entry["message"], "traceback": entry["traceback"],
                             "nodes": {"local"}}  # fmt: skip
            else:  # (Locust keys by the traceback alone: the first message stays)
                row["count"] += entry["count"]
        return rows

    @exceptions.setter
    def exceptions(self, rows: dict[int, ExceptionDict]) -> None:
        """`runner.exceptions = {}`, as Locust's own reset does: the environment's, replaced."""
        self.environment.exceptions.clear()
        for row in rows.values():
            self.environment.count_exception(row["msg"], row["traceback"], row["count"])

    def log_exception(self, node_id: str, msg: str, formatted_tb: str) -> None:
        """Locust's: one more of this exception in the test's exceptions (no user_error event)."""
        self.environment.count_exception(msg, formatted_tb)

    def begin_test(self) -> None:
        """Ready for another test after one ended (Environment.begin_test)."""
        self.users.clear()
        self.state = STATE_INIT
        self.quitting = self.stopping = self.stop_asked = False
        self.target_user_count = 0

    def quit(self) -> None:
        """Locust's: the test ends, and the run with it. Called in a user's task (or on_start), that user
        ends at the call, as Locust's quit kills the calling user's greenlet: the rest of the task never
        runs (its TaskSets' and its own on_stop do)."""
        self.quitting = True
        self._end_calling_user()

    def stop(self) -> None:
        """Locust's: the test ends (its users stopped, test_stop fired) but not the run: headless, the
        process stays until -t (or a signal), as Locust's does; with the dashboard, the page stays for a
        new test. Called in a user's task, that user ends at the call, as `quit`'s."""
        self.stop_asked = True
        self._end_calling_user()

    def end_test(self) -> None:
        """squall's own ends of a test (a signal, the page's Stop): as `quit`, without ending the user that
        happens to run (a signal comes in whatever greenlet runs then)."""
        self.quitting = True

    def _end_calling_user(self) -> None:
        current = getcurrent()
        if any(g is current for g in self.users.values()):
            raise GreenletExit  # (Locust kills the greenlet; its user's on_stop runs, and the test ends)

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


def client_id() -> str:
    """A runner's id among the nodes of a run, as Locust makes it."""
    return f"{socket.gethostname()}_{uuid.uuid4().hex}"


class WorkerRunner(Runner):
    """The runner of one worker of a distributed run (see the module's doc)."""

    def __init__(self, environment: Environment, index: int, count: int) -> None:
        super().__init__(environment)
        self.worker_index = index
        self.worker_count = count
        self.client_id = client_id()
        # To the master: taken by the worker's feed each second (nothing takes them without one).
        self.outbox: list[tuple[str, Any]] = []
        # From the master: lines on stdin (the actor writes them), delivered by `deliver()`.
        self.inbox: queue.SimpleQueue[tuple[str, Any]] = queue.SimpleQueue()
        self.has_master = False

    def listen_to_master(self) -> None:
        """Reads the master's messages from stdin (one JSON [type, data] a line) as they come."""
        self.has_master = True

        def read() -> None:
            for line in sys.stdin:
                try:
                    msg_type, data = json.loads(line)
                except (ValueError, TypeError):
                    continue
                self.inbox.put((str(msg_type), data))

        NativeThread(read, "squall-master-messages").start()  # real: a blocking read of stdin

    def send_message(self, msg_type: str, data: Any = None, client_id: str | None = None) -> None:
        """To the master (Locust's worker sends there); without one (`--processes`), nowhere."""
        if self.has_master:
            self.outbox.append((msg_type, data))
        else:
            logger.debug(f"no master to send message {msg_type} to")

    def report(self) -> dict[str, Any]:
        """Fires `report_to_master` (as Locust's worker does before each report); returns the data
        its listeners added."""
        data: dict[str, Any] = {}
        self.environment.events.report_to_master.fire(client_id=self.client_id, data=data)
        return data

    def deliver(self) -> None:
        """The master's messages that arrived, each to its listener in a greenlet of its own."""
        hub = self.environment.hub
        while True:
            try:
                msg_type, data = self.inbox.get_nowait()
            except queue.Empty:
                return
            if msg_type not in self.custom_messages:
                logger.warning(f"Unknown message type received from master: {msg_type}")
                continue
            listener, _concurrent = self.custom_messages[msg_type]
            message = Message(msg_type, data, "master")
            if hub is None:
                listener(environment=self.environment, msg=message)
            else:
                hub.spawn(
                    lambda listener=listener, message=message: listener(environment=self.environment, msg=message)
                )


class WorkerNode:
    """A worker as the master knows it (Locust's `WorkerNode`): its id, state and users."""

    def __init__(self, id: str, index: int) -> None:
        self.id = id
        self.index = index
        self.state = STATE_RUNNING
        self.user_count = 0


class MasterRunner(Runner):
    """The runner of a distributed run's driver (`--ray`, `--master`): it runs no users; its workers
    are `clients`; messages go to them through `send` (see the module's doc)."""

    def __init__(self, environment: Environment) -> None:
        super().__init__(environment)
        self.client_id = client_id()
        self.clients: dict[str, WorkerNode] = {}
        self.outbox: list[tuple[str, Any, str | None]] = []  # to workers, taken by the driver's loop

    @property
    def worker_count(self) -> int:
        return sum(1 for c in self.clients.values() if c.state != STATE_MISSING)

    @property
    def user_count(self) -> int:
        return sum(c.user_count for c in self.clients.values() if c.state != STATE_MISSING)

    def send_message(self, msg_type: str, data: Any = None, client_id: str | None = None) -> None:
        """To every worker, or to the one `client_id` names (delivered within about a second)."""
        self.outbox.append((msg_type, data, client_id))

    def received(self, client: str, index: int, reports: list[dict[str, Any]], messages: list[Any]) -> None:
        """What a worker's feed carried since the last poll: its reports (`worker_report` fires with
        each) and its messages."""
        node = self.clients.get(client)
        if node is None:
            node = self.clients[client] = WorkerNode(client, index)
        for report in reports:
            node.user_count = int(report.pop("squall_user_count", node.user_count))
            self.environment.events.worker_report.fire(client_id=client, data=report)
        for msg_type, data in messages:
            if msg_type in self.custom_messages:
                listener, _concurrent = self.custom_messages[msg_type]
                listener(environment=self.environment, msg=Message(msg_type, data, client))
            else:
                logger.warning(f"Unknown message type received from worker {client}: {msg_type}")

    def lost(self, client: str) -> None:
        if client in self.clients:
            self.clients[client].state = STATE_MISSING


def for_process(environment: Environment) -> Runner:
    """The runner of this process: a worker's when it is one (SQUALL_WORKER), else a local one."""
    spec = os.environ.get("SQUALL_WORKER")
    if spec:
        index, count = (int(x) for x in spec.split("/"))
        return WorkerRunner(environment, index, count)
    return LocalRunner(environment)

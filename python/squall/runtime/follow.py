"""Following a run while it goes, whichever loop drives it: the one place that takes the dashboard's
commands, publishes the run so far once a second (the page, the partial files, the generator's watch)
and stops the run when a threshold fails (`--threshold-abort`).

The run's loop is squall.runtime.lifecycle's, whichever kind of run it drives, and it calls
`Follower.tick` on each pass; what a command means for the run (Stop, Reset, a new user count) is the
run's `Controls`, so that a command reaches every kind of run through the same code, and a kind of run
that cannot take one says so in its own `Controls`, not in a branch of a loop.

The dashboard, the thresholds and the publisher live above this package (squall.web, squall.thresholds):
they are named here by the protocols they meet, so the run machinery imports nothing above it."""

from __future__ import annotations

import time
from typing import Any, Callable, Literal, Protocol

Why = Literal["page", "threshold"]
"""Who stopped a run: Stop on the dashboard (a run stopped by hand, as Ctrl-C) or a failed threshold."""


class Controls(Protocol):
    """What the commands of a run's followers do to it."""

    def stop(self, why: Why) -> None:
        """End the run; what it measured so far stays and is written."""

    def reset(self) -> None:
        """The page's Reset: the totals start again from now (the series so far stays)."""

    def set_users(self, users: int, spawn_rate: float) -> None:
        """The page's new user count (all processes' together), reached at `spawn_rate` a second."""


class Publishing(Protocol):
    """squall.web.live.Publisher: the run so far, read once a second and handed on."""

    def start(self, started: float, **state: Any) -> None: ...

    def due(self) -> bool: ...

    def tick(self, force: bool = False, **fields: Any) -> dict[str, Any] | None: ...


class Commands(Protocol):
    """squall.web.server.Dashboard: the commands its page sent since the last take, as (action, fields)."""

    def take_commands(self) -> list[tuple[str, dict[str, Any]]]: ...

    def obeyed(self) -> None:
        """The commands taken were done: their answers may go (the page then reads their effect)."""


class Watching(Protocol):
    """squall.thresholds.Watch: whether the run so far fails a threshold that aborts it."""

    def stops(self, live: dict[str, Any] | None, elapsed: float) -> bool: ...


class Follower:
    """One run's followers, passed over by its loop (`tick`) at least every quarter of a second: the
    page's commands wait at most that long, the publication and the thresholds once a second."""

    def __init__(
        self,
        controls: Controls,
        publisher: Publishing,
        commands: Commands | None = None,
        watch: Watching | None = None,
    ) -> None:
        self.controls = controls
        self.publisher = publisher
        self.commands = commands
        self.watch = watch
        self.started = time.monotonic()

    def begin(self, **state: Any) -> float:
        """The run starts now (the target's monitor, the page's clock and `state`); returns the time."""
        self.started = time.monotonic()
        self.publisher.start(self.started, **state)
        return self.started

    def tick(self, fields: Callable[[], dict[str, Any]] | None = None) -> dict[str, Any] | None:
        """The page's commands obeyed; once a second, the run so far published with `fields()` (what the
        run knows beyond the engine's stream: users, state, MQTT counts, ...) and judged by the
        thresholds. Returns what was published, else None."""
        self.obey()
        if not self.publisher.due():
            return None
        live = self.publisher.tick(force=True, **(fields() if fields is not None else {}))
        if self.watch is not None and self.watch.stops(live, time.monotonic() - self.started):
            self.controls.stop("threshold")
        return live

    def obey(self) -> None:
        """The page's commands since the last pass, in the order they came."""
        if self.commands is None:
            return
        for action, command in self.commands.take_commands():
            if action == "stop":
                self.controls.stop("page")
            elif action == "reset":
                self.controls.reset()
            elif action == "users":
                self.controls.set_users(int(command["users"]), float(command["spawn_rate"]))
        self.commands.obeyed()

    def end(self, **fields: Any) -> dict[str, Any] | None:
        """The run's last seconds published, whenever the last tick was."""
        return self.publisher.tick(force=True, **fields)

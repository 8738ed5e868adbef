"""A run's life while it goes, the same for every kind of run: the one place that takes the stop signals,
passes over the run's followers, shows the progress line and ends the run's publication.

Three kinds of run differ only in what one pass of their loop waits on, and each is a `Driven`:
`squall bench` and `squall mqtt` wait on the engine's thread (`commands/drive.py`, `EngineRun`), a
locustfile on its hub's greenlets (`commands/run_test.py`, `ScriptTest`), a distributed run on its
workers' answers (`distributed/driver.py`, `Driver`). `Lifecycle` does the rest, once for all:

- Ctrl-C and SIGTERM while the run goes: noted in order (the first is the run's: its exit code and the
  verdict's why), each handed to the run's `on_signal(signum, count)` (a second one may end harder, as the
  distributed driver's does). Around a run, and until its outputs are written, the command holds them
  `deferred` (squall.runtime.signals): a second Ctrl-C never cuts a file short.
- Each pass (at most a quarter of a second): the progress line, then the followers (`Follower.tick`:
  the page's commands, the run so far once a second, the thresholds).
- The end: the line cleared, whatever ended the loop (an exception too), and the last seconds
  published with the run's fields as they are then.

What a run does before its loop (placing workers, firing `test_start`) and after it (a locustfile's
users finishing their tasks, the workers' results merged) is the run's own; the outputs are the
command's (squall.outputs)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol

from squall.runtime.follow import Follower
from squall.runtime.signals import on_stop_signals


class Driven(Protocol):
    """One kind of run, as its lifecycle drives it."""

    def step(self) -> bool:
        """One pass of the run: waits at most a quarter of a second; True once the run has ended."""

    def fields(self) -> dict[str, Any]:
        """What the page shows beside the engine's stream now (users, state, MQTT counts, ...)."""

    def progress(self) -> Any:
        """What the progress line shows now (squall.report.progress.Shown), or None."""


class Line(Protocol):
    """squall.report.progress.ProgressLine: the live line on a terminal."""

    def show(self, progress: Any) -> None: ...

    def clear(self) -> None: ...


class Stoppable(Protocol):
    def on_signal(self, signum: int, count: int) -> None:
        """The `count`th stop signal of the run (1 for the first)."""


class Lifecycle:
    """The stop signals of a run (`signals`, around one test or several: a dashboard's New starts
    another in the same process) and its loop (`follow`, once a test)."""

    def __init__(self, run: Stoppable) -> None:
        self.run = run
        self.received: list[int] = []

    @property
    def signum(self) -> int | None:
        """The signal that stopped the run, if one did."""
        return self.received[0] if self.received else None

    def _on_signal(self, signum: int) -> None:
        self.received.append(signum)
        self.run.on_signal(signum, len(self.received))

    @contextmanager
    def signals(self) -> Iterator[list[int]]:
        """Inside the block Ctrl-C and SIGTERM stop the run (`received` lists them)."""
        with on_stop_signals(self._on_signal):
            yield self.received

    def follow(self, driven: Driven, follower: Follower, line: Line | None = None, **end: Any) -> None:
        """Passes over `driven` until it ends (see the module's docstring); `end`: fields the last
        publication shows over the run's own."""
        try:
            while not driven.step():
                if line is not None and (progress := driven.progress()) is not None:
                    line.show(progress)
                follower.tick(driven.fields)
        finally:
            if line is not None:
                line.clear()
        follower.end(**{**driven.fields(), **end})

"""Drives an engine run from Python: the live progress line, Ctrl-C and SIGTERM."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from squall.signals import on_stop_signals

if TYPE_CHECKING:
    from squall._engine import Run
    from squall.commands.progress import ProgressLine


def drive(engine_run: Run, line: ProgressLine | None = None) -> tuple[dict[str, Any], int | None]:
    """Waits for the run to end, showing its progress on `line` if given; returns (result dict, the
    signal that stopped it or None). A signal stops the run, and the result still holds everything
    measured until then.
    """
    received: list[int] = []

    def on_signal(signum: int) -> None:
        received.append(signum)
        engine_run.stop()

    with on_stop_signals(on_signal):
        try:
            while not engine_run.wait(0.25):
                if line:
                    line.show(engine_run.progress())
        finally:
            if line:
                line.clear()
    return engine_run.result(), (received[0] if received else None)

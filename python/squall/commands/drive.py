"""Drives an engine run from Python: the live progress line, the dashboard, Ctrl-C and SIGTERM."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from squall.signals import on_stop_signals

if TYPE_CHECKING:
    from squall._engine import Progress, Run
    from squall.commands.progress import ProgressLine
    from squall.web.server import Dashboard


def drive(
    engine_run: Run, line: ProgressLine | None = None, dashboard: Dashboard | None = None
) -> tuple[dict[str, Any], int | None]:
    """Waits for the run to end, showing its progress on `line` and `dashboard` if given; returns
    (result dict, the signal that stopped it or None). A signal, or Stop on the dashboard, stops the
    run, and the result still holds everything measured until then.
    """
    received: list[int] = []

    def on_signal(signum: int) -> None:
        received.append(signum)
        engine_run.stop()

    publisher = None
    if dashboard is not None:
        from squall.web.live import Publisher

        publisher = Publisher(dashboard.store, lambda cursor: engine_run.live(cursor, 0.0))
        dashboard.store.set(state="running", started=time.monotonic())

    with on_stop_signals(on_signal):
        try:
            while not engine_run.wait(0.25):
                progress = engine_run.progress() if (line or dashboard) else None
                if line and progress:
                    line.show(progress)
                if dashboard is not None and publisher is not None and progress is not None:
                    for action, _ in dashboard.take_commands():
                        if action == "stop":
                            engine_run.stop()
                            dashboard.store.set(state="stopping")
                        elif action == "reset":
                            engine_run.reset_totals()
                    mqtt = _mqtt(progress) if dashboard.store.kind == "mqtt" else None
                    publisher.tick(users=progress.users, mqtt=mqtt)
        finally:
            if line:
                line.clear()
    if publisher is not None:
        publisher.tick(force=True)
    result = engine_run.result()
    if dashboard is not None:
        dashboard.store.finish(result)
    return result, (received[0] if received else None)


def _mqtt(p: Progress) -> dict[str, int]:
    return {
        "connected": p.connected,
        "sent": p.sent,
        "published": p.published,
        "delivered": p.delivered,
        "failed": p.mqtt_failed,
    }

"""Drives an engine run from Python: the live progress line, the dashboard, the partial files, Ctrl-C
and SIGTERM."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from squall.signals import on_stop_signals
from squall.web.live import Publisher

if TYPE_CHECKING:
    from squall._engine import Progress, Run
    from squall.commands.progress import ProgressLine
    from squall.thresholds import Watch
    from squall.web.live import PartialFiles
    from squall.web.server import Dashboard


def drive(
    engine_run: Run,
    line: ProgressLine | None = None,
    dashboard: Dashboard | None = None,
    partial: PartialFiles | None = None,
    watch: Watch | None = None,
) -> tuple[dict[str, Any], int | None]:
    """Waits for the run to end, showing its progress on `line` and `dashboard`, saving it in `partial`
    and checking `watch`'s thresholds if given; returns (result dict, the signal that stopped it or
    None). A signal, Stop on the dashboard or a failed threshold (`--threshold-abort`) stops the run,
    and the result still holds everything measured until then.
    """
    received: list[int] = []

    def on_signal(signum: int) -> None:
        received.append(signum)
        engine_run.stop()

    store = dashboard.store if dashboard is not None else None
    publisher = None
    if store is not None or partial is not None or watch is not None:
        publisher = Publisher(lambda cursor: engine_run.live(cursor, 0.0), store, partial)
    started = time.monotonic()
    if store is not None:
        store.set(state="running", started=started)

    with on_stop_signals(on_signal):
        try:
            while not engine_run.wait(0.25):
                progress = engine_run.progress() if (line or store) else None
                if line and progress:
                    line.show(progress)
                if dashboard is not None:
                    _obey(dashboard, engine_run)
                if publisher is not None:
                    fields = _fields(progress, dashboard.store.kind) if dashboard and progress else {}
                    live = publisher.tick(**fields)
                    if watch is not None and watch.stops(live, time.monotonic() - started):
                        engine_run.stop()
        finally:
            if line:
                line.clear()
    if publisher is not None:
        publisher.tick(force=True)
    # The command hands the result to the dashboard once it has judged and written it (`store.finish`).
    return engine_run.result(), (received[0] if received else None)


def _obey(dashboard: Dashboard, engine_run: Run) -> None:
    """The dashboard's commands a bench or MQTT run takes: stop, reset."""
    for action, _ in dashboard.take_commands():
        if action == "stop":
            engine_run.stop()
            dashboard.store.set(state="stopping")
        elif action == "reset":
            engine_run.reset_totals()


def _fields(p: Progress, kind: str) -> dict[str, Any]:
    fields: dict[str, Any] = {"users": p.users}
    if kind == "mqtt":
        fields["mqtt"] = {
            "connected": p.connected,
            "sent": p.sent,
            "published": p.published,
            "delivered": p.delivered,
            "failed": p.mqtt_failed,
        }
    return fields

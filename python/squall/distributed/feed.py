"""A distributed worker's live feed: what its engine published each second, written as one JSON line
to the pipe its Ray actor reads (the file descriptor in SQUALL_WORKER_FEED).

The worker's driving loop already hands each second to a `PartialFiles`; the feed takes that place, so
the worker runs the same loop, at the same cost, as a local run that writes partial files. A line
holds the new seconds (counts, percentiles, and the histograms of the second: the worker asks its
engine's live stream for them), the live totals (every endpoint's histogram, cumulative, so that the
driver merges them exactly), the run's progress
counters (MQTT's connections and deliveries are nowhere else), and for a locustfile, its runner's
`client_id`, what `report_to_master` listeners added (`report`) and the messages it sent the master.

A write that fails means the actor is gone (killed, or its node lost): the worker then stops itself
(SIGTERM, as Ctrl-C would), so that no load generator outlives its actor."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from typing import TYPE_CHECKING, Any, Callable

from squall import exitcodes
from squall.runtime.signals import on_stop_signals
from squall.web import page
from squall.web.live import PartialFiles

if TYPE_CHECKING:
    from squall._engine import Progress
    from squall.runners import WorkerRunner

FEED_ENV = "SQUALL_WORKER_FEED"
START_ENV = "SQUALL_WORKER_START_AT"  # unix time: the workers' engines start together
PROGRESS_FIELDS = ("elapsed", "completed", "failed", "users", "phase", "connected", "sent", "published")
MQTT_FIELDS = ("mqtt_failed", "delivered")


class WorkerFeed(PartialFiles):
    """Takes a `PartialFiles`' place in a worker's driving loop (`add` each second, `done` at the end);
    writes to a pipe instead of files, so it shares the interface and none of the state."""

    def __init__(self, fd: int, progress: Callable[[], Progress] | None = None) -> None:
        self.out = os.fdopen(fd, "w", encoding="utf-8")
        self.progress = progress
        self.broken = False
        self.runner: WorkerRunner | None = None  # a locustfile's: its reports and messages go too

    def add(self, live: dict[str, Any]) -> None:
        if self.broken:
            return
        record: dict[str, Any] = {"timeseries": live["timeseries"], "totals": strip_totals(live["totals"])}
        if self.progress is not None:
            p = self.progress()
            record["progress"] = {k: getattr(p, k) for k in (*PROGRESS_FIELDS, *MQTT_FIELDS)}
        if self.runner is not None:
            report = self.runner.report()
            report["squall_user_count"] = self.runner.user_count
            record.update(client_id=self.runner.client_id, report=report, messages=self.runner.outbox)
            self.runner.outbox = []
        try:
            self.out.write(page.to_json(record) + "\n")
            self.out.flush()
        except OSError:  # the actor is gone: so is the point of this run
            self.broken = True
            os.kill(os.getpid(), signal.SIGTERM)

    def done(self) -> None:
        with contextlib.suppress(OSError):
            self.out.close()


def strip_totals(totals: dict[str, Any]) -> dict[str, Any]:
    """The live totals without what the driver recomputes from the histograms (the spectrum and the
    buckets), or, when they have no histogram (no requests yet), without the empty one."""

    def lean(e: dict[str, Any] | None) -> dict[str, Any] | None:
        if e is None:
            return None
        drop = ("spectrum", "buckets") if e.get("histogram") else ("histogram",)
        return {k: v for k, v in e.items() if k not in drop}

    return {
        "aggregate": lean(totals.get("aggregate")),
        "endpoints": [lean(e) for e in totals.get("endpoints", [])],
        "errors": totals.get("errors", []),
    }


def worker_feed(progress: Callable[[], Progress] | None = None) -> WorkerFeed | None:
    """The feed of this process when it is a distributed worker whose actor reads it, else None."""
    fd = os.environ.get(FEED_ENV)
    if not fd:
        return None
    return WorkerFeed(int(fd), progress)


def wait_for_start() -> None:
    """A distributed worker waits for the run's common start time (its Python started sooner or later
    than the others'), so that the workers' seconds line up; past it, it starts at once. Stopped
    while it waits (Ctrl-C or SIGTERM from its actor), it exits as a stopped run exits, having run
    nothing."""
    at = os.environ.get(START_ENV)
    if not at:
        return
    stopped: list[int] = []
    with on_stop_signals(stopped.append):
        while not stopped and time.time() < float(at) and float(at) - time.time() < 120:
            time.sleep(min(0.05, max(0.0, float(at) - time.time())))
    if stopped:
        raise SystemExit(exitcodes.stopped_by(stopped[0]))

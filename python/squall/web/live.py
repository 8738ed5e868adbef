"""Glue between a run's driving loop and its dashboard: the web options of every command, starting the
server, publishing the live stream once a second, and serving the end.

After a run, a dashboard keeps serving its final state (the result, its Download buttons) until Ctrl-C or
SIGTERM, or for `--autoquit N` seconds, as Locust's web UI does (`serve_the_end`, one lifecycle for every
command). A run stopped by Ctrl-C or SIGTERM was asked to quit: its dashboard stays only the moment an
open page needs to fetch the result (`FINAL_GRACE`). A run without a dashboard (headless, CI) never waits."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import threading
import time
from typing import TYPE_CHECKING, Any, Callable

from squall import __version__, files, inputs, load_values
from squall.errors import UsageError
from squall.runtime.signals import on_stop_signals
from squall.web import page

if TYPE_CHECKING:
    from squall.monitor import GeneratorWatch, Monitor
    from squall.web.server import Dashboard, LiveStore

PUBLISH_EVERY = 1.0  # seconds; the stream itself is per second
# Distinct request names (method and name) past which a run warns, once: a summary or a page of more
# rows is not read by anyone, and so many names are nearly always ids in the path, each its own name
# (`name=f"/item/{id}"`), where a person wants one row for all of them. Each name costs memory too,
# what it measured (a few KB: docs/locustfiles.md), and the result has a row per name per second.
MANY_NAMES = 1000
# After a run with a page open, the dashboard stays up this long so that the page fetches the result.
FINAL_GRACE = 2.0


def add_arguments(group: argparse._ArgumentGroup, default_port: int | None, autoquit: bool = False) -> None:
    """--web-host, --web-port, --web-auth, and with `autoquit` --autoquit (squall -f adds Locust's others,
    its --autoquit among them)."""
    group.add_argument(
        "--web-port",
        type=load_values.port,
        default=default_port,
        metavar="PORT",
        help=f"serve the live dashboard on this port (default {default_port})"
        if default_port
        else "serve the live dashboard on this port (0: any free port)",
    )
    group.add_argument("--web-host", default="127.0.0.1", help="address the dashboard binds (default 127.0.0.1)")
    group.add_argument(
        "--web-auth",
        metavar="USER:PASS",
        help="HTTP basic authentication for the dashboard (needed for its controls beyond loopback)",
    )
    if autoquit:
        group.add_argument(
            "--autoquit",
            type=int,
            default=None,
            metavar="SECONDS",
            help="with --web-port: quit this long after the run ends (default: serve the result until Ctrl-C)",
        )


def check_autoquit(args: argparse.Namespace) -> None:
    """--autoquit says when a dashboard stops: without --web-port there is none (a usage error)."""
    if getattr(args, "autoquit", None) is not None and args.web_port is None:
        raise UsageError("--autoquit goes with --web-port: without a dashboard the run ends at once")


def start(
    args: argparse.Namespace,
    command: str,
    kind: str,
    target: str,
    *,
    controls: dict[str, bool],
    form: dict[str, Any] | None = None,
    load: dict[str, Any] | None = None,
) -> Dashboard:
    """Starts the dashboard for this run (a one-line error, exit 2, when its port cannot be bound)."""
    from squall.web.server import Dashboard, LiveStore  # http.server only when serving: start-up

    if args.web_auth is not None and ":" not in args.web_auth:
        raise UsageError("--web-auth takes USER:PASS")
    argv = getattr(args, "argv", None) or sys.argv[1:]
    page_meta = page.meta(command, argv, target, controls=controls, form=form)
    page_meta["load"] = load or {}
    page_meta["thresholds"] = list(args.threshold or []) or None  # pending until the run ends
    page_meta["monitor"] = [] if _monitoring(args) else None  # the live view carries the samples
    store = LiveStore(page_meta, kind)
    try:
        dashboard = Dashboard(store, args.web_host, args.web_port, args.web_auth)
    except OSError as e:
        raise UsageError(f"cannot serve the dashboard on {args.web_host}:{args.web_port}: {e.strerror or e}") from None
    dashboard.start()
    return dashboard


PARTIAL_SERIES = ".partial.jsonl"
PARTIAL_TOTALS = ".partial.json"


class PartialFiles:
    """The run so far beside its result file, so that a crash (kill -9, a lost machine) loses at most
    the last second: RESULT.partial.jsonl gets a header line and then each second as it is published
    (appended and flushed), RESULT.partial.json the live totals (replaced whole, atomically). Both go
    once the result itself is written; `squall report RESULT.partial.jsonl` renders what they hold."""

    def __init__(self, result_path: str, header: dict[str, Any]) -> None:
        self.result_path = result_path
        self.series_path = result_path + PARTIAL_SERIES
        self.totals_path = result_path + PARTIAL_TOTALS
        self.series = open(self.series_path, "w", encoding="utf-8")  # noqa: SIM115 (open for the run)
        self.seconds = 0
        self.broken = False  # a write failed (the disk filled up, the directory went): no more tries
        self._line({"squall_partial": 1, **header})

    def _line(self, doc: dict[str, Any]) -> None:
        self.series.write(page.to_json(doc) + "\n")
        self.series.flush()

    def add(self, live: dict[str, Any]) -> None:
        """Appends the seconds of `live` and replaces the totals. A write that fails is said once and
        ends the partial files, not the run: its result is still written at its end (or said failed,
        exit 5), as a crash's partial files are only a fallback."""
        if self.broken:
            return
        tmp = self.totals_path + ".tmp"
        try:
            for point in live["timeseries"]:
                self._line(point)
                self.seconds += 1
            # The totals name the seconds they cover: a kill between the lines above and the replace
            # below leaves seconds the totals do not hold, which read_partial leaves out (CI met one:
            # the page's total read 400 beside a chart of 600).
            with open(tmp, "w", encoding="utf-8") as f:
                f.write(page.to_json({**live["totals"], "seconds": self.seconds}))
            os.replace(tmp, self.totals_path)
        except OSError as e:
            self.broken = True
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            sys.stderr.write(
                f"squall: cannot write {self.series_path} ({e.strerror or e}): the run goes on without its "
                "partial files\n"
            )

    def done(self) -> None:
        """The result is written: the partial files have served. If it could not be written (the disk
        filled up), they are the run's only copy: they stay, and stderr says where."""
        with contextlib.suppress(OSError):  # (its last flush: the disk may be full)
            self.series.close()
        if self.result_path in files.failed() and os.path.exists(self.series_path):
            sys.stderr.write(
                f"squall: the run as it went stays in {self.series_path} "
                f"(squall report {self.series_path} renders it)\n"
            )
            return
        for path in (self.series_path, self.totals_path):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)


def read_partial(path: str) -> dict[str, Any]:
    """A result document from a crashed run's partial files (`path`: RESULT.partial.jsonl), checked as a
    saved result is (squall.inputs: InputError, one line, for a file that is not one). A line that is not
    a whole second ends the series (the line being written when the run died), and so do seconds the
    totals do not cover yet (the run died between the two writes), so that the page's totals and its
    chart agree; totals that cannot be read are left out, with a warning, as the seconds still make a
    report."""
    lines: list[dict[str, Any]] = []
    for n, line in enumerate(inputs.read_text(path).split("\n"), 1):
        try:
            doc = inputs.parse_json(line, f"{path}:{n}") if line.strip() else None
        except inputs.InputError:
            break
        if not isinstance(doc, dict):
            break
        lines.append(doc)
    if not lines or lines[0].get("squall_partial") != 1:
        raise inputs.InputError(f"{path} is not a squall partial result")
    header, points = lines[0], lines[1:]
    totals_path = path[: -len(PARTIAL_SERIES)] + PARTIAL_TOTALS if path.endswith(PARTIAL_SERIES) else ""
    totals: Any = {"aggregate": page.no_requests(), "endpoints": [], "errors": []}
    if totals_path and os.path.exists(totals_path):
        try:
            read = inputs.parse_json(inputs.read_text(totals_path), totals_path)
            inputs.check_totals(read, totals_path)
            totals = read
        except inputs.InputError as e:
            sys.stderr.write(f"squall: warning: {e}; the report has the seconds without the totals\n")
    covered = totals.get("seconds")
    if isinstance(covered, int) and not isinstance(covered, bool) and 0 <= covered < len(points):
        points = points[:covered]  # the run died between a second's line and its totals: as the totals

    def text(key: str) -> str:
        return header[key] if isinstance(header.get(key), str) else ""

    start = header.get("start_unix")
    doc = {
        "squall_version": text("squall_version"),
        "kind": text("kind") or "http",
        "url": text("url"),
        "method": "",
        "start_unix": start if isinstance(start, (int, float)) and not isinstance(start, bool) else 0.0,
        "duration_s": float(len(points)),
        "stop_reason": "crashed",
        "load": header["load"] if isinstance(header.get("load"), dict) else {},
        "aggregate": totals["aggregate"],
        "endpoints": totals["endpoints"],
        "errors": totals.get("errors") or [],
        "schedule": None,
        "abandoned": 0,
        "timeseries": points,
    }
    reset = totals.get("reset_s")  # the totals count from a reset: their rates from then
    if isinstance(reset, int) and not isinstance(reset, bool) and 0 < reset <= len(points):
        doc["reset_s"] = float(reset)
    inputs.check_result(doc, path)
    return doc


class LiveSchedule:
    """A paced run's schedule so far (the result's `schedule` section, live), summed from the seconds'
    own `schedule` (sent, late, lag): the dashboard's Late card and Schedule table while the run goes.
    Intended: the configured rate over the seconds published (what was due; the engine counts the exact
    number only at the end), never fewer than were sent."""

    def __init__(self) -> None:
        self.seconds = 0
        self.sent = 0
        self.late = 0
        self.lag_sum_us = 0.0
        self.max_lag_us = 0.0

    def add(self, points: list[dict[str, Any]]) -> None:
        for p in points:
            self.seconds += 1
            s = p.get("schedule")
            if s:
                self.sent += s.get("sent", 0)
                self.late += s.get("late", 0)
                self.lag_sum_us += s.get("lag_sum_us", 0)
                self.max_lag_us = max(self.max_lag_us, s.get("max_lag_us", 0))

    def view(self, rate: float | None) -> dict[str, Any] | None:
        if not self.sent:
            return None
        intended = max(self.sent, round((rate or 0) * self.seconds))
        return {
            "rate": rate or 0,
            "intended": intended,
            "sent": self.sent,
            "late": self.late,
            "late_after_ms": 10,
            "mean_lag_us": self.lag_sum_us / self.sent,
            "max_lag_us": self.max_lag_us,
            "dropped": 0,
        }


class Publisher:
    """Reads the engine's live stream at most once a `PUBLISH_EVERY` and hands it to the dashboard's
    store (with the schedule so far of a paced run) and to the partial files, whichever the run has."""

    def __init__(
        self,
        read: Callable[[int], dict[str, Any]],
        store: LiveStore | None = None,
        partial: PartialFiles | None = None,
        generator: GeneratorWatch | None = None,
        monitor: Monitor | None = None,
        names_warning: bool = True,
    ) -> None:
        self.read = read
        self.store = store
        self.partial = partial
        self.generator = generator
        self.monitor = monitor
        self.cursor = 0
        self.last = 0.0
        self.schedule = LiveSchedule()
        # Whether to warn of many names: a worker's process leaves it to the process that shows the run.
        self.names_warning = names_warning

    def start(self, started: float, **state: Any) -> None:
        """The run starts (`started`: time.monotonic()): the target's monitor from now, the page's clock
        and `state` (its run state, when the run has one of its own)."""
        if self.monitor is not None:
            self.monitor.start(time.time())
        if self.store is not None:
            self.store.set(started=started, **state)

    def due(self) -> bool:
        """A second has passed since the last publication."""
        return time.monotonic() - self.last >= PUBLISH_EVERY

    def tick(self, force: bool = False, **fields: Any) -> dict[str, Any] | None:
        """Publishes if a second has passed (or `force`); returns what it read, else None."""
        now = time.monotonic()
        if not force and now - self.last < PUBLISH_EVERY:
            return None
        self.last = now
        live = self.read(self.cursor)
        self.cursor = live["cursor"]
        if self.generator is not None:
            self.generator.sample(live["timeseries"])
        if self.store is not None:
            if self.monitor is not None:
                fields["monitor"] = self.monitor.latest()
            if self.generator is not None:
                fields["generator"] = self.generator.to_json()
            self.schedule.add(live["timeseries"])
            schedule = self.schedule.view((self.store.meta.get("load") or {}).get("rate"))
            if schedule is not None:
                fields.setdefault("schedule", schedule)
            self.store.publish(live, **fields)
        if self.partial is not None:
            self.partial.add(live)
        self.check_names(live)
        return live

    def check_names(self, live: dict[str, Any]) -> None:
        """Warns once when the run has more than `MANY_NAMES` distinct names (see there)."""
        if self.names_warning:
            warn_of_many_names(len((live.get("totals") or {}).get("endpoints") or ()))


_names_warned = False


def warn_of_many_names(names: int) -> None:
    """The warning of `MANY_NAMES` (see there): one line on stderr, the first time a run has more
    distinct names (the live totals while it runs, the result at its end), once in the process."""
    global _names_warned
    if names > MANY_NAMES and not _names_warned:
        _names_warned = True
        sys.stderr.write(
            f"squall: warning: {names:,} distinct request names (more than {MANY_NAMES:,}); if they differ "
            'by an id, group them with name= (self.client.get(f"/item/{id}", name="/item/[id]"))\n'
        )


def partial_files(result_path: str | None, kind: str, url: str, load: dict[str, Any]) -> PartialFiles | None:
    """The partial files of a run that writes its result to `result_path` (none without one, nor for a
    result going to a device, a pipe or through a link such as /dev/stdout: they would go beside it,
    /dev/stdout.partial.jsonl in /dev)."""
    if not result_path or not files.plain(result_path):
        return None
    header = {
        "squall_version": __version__,
        "kind": kind,
        "url": page.redact_argv([url])[0],
        "start_unix": time.time(),
        "load": load,
    }
    try:
        return PartialFiles(result_path, header)
    except OSError as e:
        raise UsageError(f"cannot write {result_path}{PARTIAL_SERIES}: {e.strerror or e}") from None


def linger(dashboard: Dashboard, seconds: float | None = None) -> None:
    """Keeps serving after the run for `seconds`, by default briefly and only while a page is open
    (it polled in the last few seconds), so that the page gets the final result; then stops. Ctrl-C
    or SIGTERM ends the wait."""
    if seconds is None:
        polled = dashboard.store.last_poll
        seconds = FINAL_GRACE if polled is not None and time.monotonic() - polled < 3 * PUBLISH_EVERY else 0.0
    _wait(seconds)
    dashboard.stop()


def serve_the_end(dashboard: Dashboard, result: dict[str, Any], autoquit: int | None, signum: int | None) -> None:
    """After a run whose summary and files are written (the module's policy): the dashboard shows
    `result` for `autoquit` seconds, or (None, or negative as Locust's -1) until Ctrl-C or SIGTERM;
    right after a run that a signal stopped (`signum`), only for `FINAL_GRACE`. Then it stops."""
    dashboard.store.finish(result)
    if signum is not None:
        linger(dashboard)
        return
    forever = autoquit is None or autoquit < 0
    if forever or autoquit:
        until = "until Ctrl-C" if forever else f"for {autoquit} s (--autoquit)"
        sys.stderr.write(f"squall: the run ended; its dashboard stays at {dashboard.url} {until}\n")
        sys.stderr.flush()
    _wait(None if forever else autoquit)
    dashboard.stop()


def _wait(seconds: float | None) -> None:
    """Sleeps `seconds` (None: for ever) or until SIGINT or SIGTERM, which end the wait quietly."""
    stop = threading.Event()
    with on_stop_signals(lambda _signum: stop.set()):
        if seconds is not None:
            stop.wait(seconds)
        else:
            while not stop.wait(3600):
                pass


def _monitoring(args: argparse.Namespace) -> bool:
    return any(getattr(args, k, None) for k in ("monitor_pid", "monitor_name", "monitor_cgroup", "monitor_container"))

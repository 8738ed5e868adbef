"""What the driver knows of each worker, and how the report lists them: where it ran, its share, what it
achieved (rate, CPU), how current its stream was (lag), and what became of it (finished, lost,
replaced). Shared by the driver and the tests; no Ray here."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, TextIO

if TYPE_CHECKING:
    from squall.monitor import Monitor
    from squall.report.progress import ProgressLine
    from squall.runners import MasterRunner
    from squall.thresholds import Watch
    from squall.web.live import PartialFiles
    from squall.web.server import Dashboard

SHARE_UNITS = {"connections": "conn", "requests": "req", "rate": "req/s", "clients": "clients", "users": "users"}


@dataclass
class Command:
    """The command a distributed run runs on every worker, and the driver's parts of it."""

    name: str  # bench, mqtt, run
    kind: str  # the result's kind: http or mqtt
    url: str
    units: int  # connections, clients or users in all
    what: str  # their name, for the messages
    # Prints and writes the merged result as the command does for a local run; returns its exit code
    # (the signal that stopped the run, if one did, is given).
    finish: Callable[[dict[str, Any], int | None], int]
    shares: Callable[[int], list[dict[str, Any]]]  # each of n workers' share, as the report lists it
    env: dict[str, str] = field(default_factory=dict)  # for every worker
    line: ProgressLine | None = None
    dashboard: Dashboard | None = None
    partial: PartialFiles | None = None
    watch: Watch | None = None
    monitor: Monitor | None = None
    # The environment of a worker taking over share (slot, count) from a lost one that ran `elapsed`
    # seconds and completed `sent` requests; None when the run cannot give the rest of a share to a
    # new worker (a loss is then handled as continue), {} when nothing of it is left.
    remaining: Callable[[tuple[int, int], float, int], dict[str, str] | None] | None = None
    tables: TextIO = field(default_factory=lambda: sys.stdout)  # where the workers' table goes
    # A locustfile's: the driver's runner (reports and messages from the workers go to it, its
    # messages to them), the locustfiles' texts (for nodes that do not have them), and what to do
    # once the workers run (Locust's master fires test_start then).
    runner: MasterRunner | None = None
    files: dict[str, str] | None = None
    started: Callable[[], None] | None = None
    # `--master`: the Ray resource a node must offer to host a worker (the master's head offers none),
    # and what to do once connected, before placing (wait for the expected workers).
    placement: str | None = None
    prepare: Callable[[Any], None] | None = None


@dataclass
class WorkerState:
    """One worker as the driver follows it."""

    index: int  # unique in the run (a replacement gets a new one)
    count: int
    slot: int  # whose share it runs: worker `slot` of `count`
    handle: Any = None
    info: dict[str, Any] = field(default_factory=dict)  # node, host, pids (the actor's `start`)
    state: str = "starting"  # starting, running, exited, lost
    pending: Any = None  # the poll in flight
    last_answer: float = 0.0  # monotonic
    code: int | None = None
    totals: dict[str, Any] | None = None  # the latest live totals it sent
    progress: dict[str, Any] | None = None
    points: int = 0  # seconds received
    last_unix: float | None = None  # the end of its newest second received
    lag_max_s: float = 0.0  # the largest age of its newest second when the driver looked
    lag_sum_s: float = 0.0
    lag_n: int = 0
    feed_bytes: int = 0  # what its feed carried, worker to actor
    poll_bytes: int = 0  # what its polls carried, actor to driver (pickled)
    lost_reason: str | None = None
    replaces: int | None = None  # the worker whose share it took over
    final: dict[str, Any] | None = None  # the actor's `result`
    client_id: str | None = None  # its locustfile runner's
    stderr_tail: list[str] = field(default_factory=list)

    @property
    def active(self) -> bool:
        return self.state in ("starting", "running")

    def observe_lag(self, now: float) -> None:
        """The age of the newest second received (0 when it is the one just ended)."""
        if self.last_unix is None or not self.active:
            return
        lag = max(0.0, now - self.last_unix - 1.0)
        self.lag_max_s = max(self.lag_max_s, lag)
        self.lag_sum_s += lag
        self.lag_n += 1

    def label(self) -> str:
        host = self.info.get("host") or self.info.get("node_ip") or "?"
        return f"worker {self.index} on {host}"


def entry(w: WorkerState, share: dict[str, Any], result: dict[str, Any] | None) -> dict[str, Any]:
    """The worker's line in the result's `workers` list (a lost worker's counts: what it had sent)."""
    agg = (result or {}).get("aggregate") or ((w.totals or {}).get("aggregate") if w.state == "lost" else None) or {}
    duration = float((result or {}).get("duration_s") or (w.points if w.state == "lost" else 0.0))
    cpu, wall = (w.final or {}).get("cpu_s"), (w.final or {}).get("wall_s")
    out: dict[str, Any] = {
        "index": w.index,
        "host": w.info.get("host"),
        "node_ip": w.info.get("node_ip"),
        "node_id": w.info.get("node_id"),
        "share": share,
        "state": "lost" if w.state == "lost" else "finished",
        "exit_code": w.code,
        "requests": agg.get("requests", 0),
        "failures": agg.get("failures", 0),
        "duration_s": round(duration, 3),
        "rate": round(agg.get("requests", 0) / duration, 1) if duration > 0 else 0.0,
        "cpu_s": None if cpu is None else round(cpu, 3),
        # of the worker's process over its life (start-up included), as `time` would show it
        "cpu_percent": None if cpu is None or not wall else round(100.0 * cpu / wall, 1),
        "stream": {
            "seconds": w.points,
            "lag_max_s": round(w.lag_max_s, 3),
            "lag_mean_s": round(w.lag_sum_s / w.lag_n, 3) if w.lag_n else 0.0,
            "feed_bytes": w.feed_bytes,
            "poll_bytes": w.poll_bytes,
        },
    }
    if agg.get("histogram"):  # its own samples: the merge can be checked, or redone without it
        out["histogram"] = agg["histogram"]
    schedule = (result or {}).get("schedule")
    if schedule:
        out["schedule_lag_us"] = {"mean": round(schedule["mean_lag_us"], 1), "max": schedule["max_lag_us"]}
    if (result or {}).get("mqtt"):
        m = result["mqtt"]  # type: ignore[index]
        out["published"] = m.get("published", 0)
    if w.lost_reason:
        out["lost"] = w.lost_reason
    if w.replaces is not None:
        out["replaces"] = w.replaces
    return out


def table(workers: list[dict[str, Any]]) -> str:
    """The console's list of workers, after the run's own tables."""
    lines = ["Workers:"]
    lines.append(
        f"  {'#':>3}  {'host':<18} {'state':<9} {'share':<22} {'requests':>10} {'req/s':>9} {'CPU':>7} {'lag max':>8}"
    )
    for w in workers:
        share = ", ".join(_share_text(k, v) for k, v in w["share"].items() if k in SHARE_UNITS)
        cpu = "-" if w["cpu_percent"] is None else f"{w['cpu_percent']:.0f}%"
        lines.append(
            f"  {w['index']:>3}  {str(w['host'] or '?')[:18]:<18} {w['state']:<9} {share[:22]:<22} "
            f"{w['requests']:>10,} {w['rate']:>9,.0f} {cpu:>7} {w['stream']['lag_max_s']:>7.1f}s"
        )
        if w.get("lost"):
            lines.append(f"       lost: {w['lost']}")
    return "\n".join(lines) + "\n"


def _share_text(key: str, value: float) -> str:
    number = f"{value:,.6g}" if isinstance(value, float) else f"{value:,}"
    return f"{number} {SHARE_UNITS[key]}"

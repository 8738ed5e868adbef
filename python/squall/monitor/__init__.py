"""Resource monitoring beside a run: the target's processes, cgroup or container and the host, sampled
every second and aligned with the load's time series; and the generator watching itself, so that
nobody takes squall's own limit for the target's.

What is read, and how it compares with the usual tools:

- CPU % as `top` and `docker stats` show it: 100% is one core, so a process on four cores can reach
  400%. For processes, the delta of utime + stime in /proc/PID/stat over the second; for a cgroup, the
  delta of `usage_usec` in its cpu.stat. The host's CPU uses the same scale (with "cpus" beside it).
- RSS: the processes' resident memory summed (pages shared by forked workers count in each, as in
  `ps`); for a cgroup, `memory.current` less `inactive_file`, the usage `docker stats` shows.
- threads, open descriptors (entries of /proc/PID/fd; None when not readable, e.g. another user's
  processes without root), processes.

A `--monitor-pid` target is the process and all its descendants, found again every second, so that
workers a master respawns (gunicorn, php-fpm) are picked up, and children that outlive their parent
stay counted. The CPU of a process that exits between two samples is not lost when its parent (in the
target) reaps it: the parent's cutime + cstime grow by the child's total, less what was already counted
(as `getrusage(RUSAGE_CHILDREN)`). A cgroup counts everything exactly, exited processes included.

The sampling runs on its own daemon thread, in Python, once a second; it holds the GIL for well under
a millisecond (it matters only to locustfile runs, whose users are Python). Per-process figures come
from one read of /proc/PID/stat (where psutil reads three files: stat, statm, status) and one stat of
/proc/PID/fd (whose size is the number of descriptors since Linux 6.2; older kernels list it); the
process table (which pids exist, their parents and names) is read only for pids not seen before.
psutil gives the host's CPU and memory and the names in labels. CPU time of one sample, measured on a
2-core VM (Linux 6.18, Python 3.11, 90 processes on the host; best of 7 runs of 50): the host alone
0.15 ms; with a --monitor-pid target of 5 processes 0.47 ms; with a --monitor-name target of 5
processes 0.8 ms. That is under 0.1% of a core at one sample a second. Each process in a target adds
about 30 us (1,000 processes in one target: 30 ms a second, 3% of a core), a host of 1,000 processes
about 1 ms (the listing of /proc), and the first second a process is seen about 30 us more.
`GeneratorWatch.sample` reads one small file per thread of squall: 0.1 ms for the 5 threads of a
bench run. (`Monitor.cost_per_sample_s` and `GeneratorWatch.cost_per_sample_s` give a run's own.)

Linux only, as the engine is (timerfd): everything is read from /proc and /sys/fs/cgroup.

The package, by source: procfs.py (/proc: a process's stat, descriptors and argv, the process table,
and `_Target`, what every target is), processes.py (`--monitor-pid`, `--monitor-name`), cgroup.py
(`--monitor-cgroup`, `--monitor-container`), host.py (psutil's host CPU and memory), generator.py
(`GeneratorWatch`, squall's own threads); here, the options, `Monitor` sampling them every second and
the console's summary. Imports go one way: procfs.py first, this module last.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import threading
import time
from typing import Any

from squall.errors import UsageError
from squall.monitor.cgroup import _Cgroup, resolve_cgroup, resolve_container

# The package's public names, wherever they live (callers and tests import them from squall.monitor).
from squall.monitor.cgroup import cgroup2_mount as cgroup2_mount
from squall.monitor.cgroup import cgroup_of as cgroup_of
from squall.monitor.cgroup import cpu_usage_usec as cpu_usage_usec
from squall.monitor.cgroup import memory_usage as memory_usage
from squall.monitor.generator import GeneratorWatch as GeneratorWatch
from squall.monitor.host import _Host
from squall.monitor.processes import _Named, _Processes, _Tree
from squall.monitor.procfs import (
    COMM_MAX,
    HOST_METRICS,
    INTERVAL,
    METRICS,
    MIN_PARTIAL,
    Sample,
    Values,
    _boottime,
    _ProcTable,
    _read_stat,
    _Target,
)
from squall.monitor.procfs import _Stat as _Stat
from squall.monitor.procfs import name_matches as name_matches
from squall.monitor.procfs import parse_stat as parse_stat
from squall.report.units import size
from squall.runtime.gevent_hub import NativeThread


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The `monitoring` options: what to watch beside the load."""
    g = parser.add_argument_group(
        "monitoring",
        "sample the target's CPU, memory, threads and descriptors, and the host's, every second beside "
        "the load (CPU: 100% is one core)",
    )
    g.add_argument(
        "--monitor-pid",
        type=int,
        action="append",
        metavar="PID",
        help="a process and its children, new ones included (repeatable)",
    )
    g.add_argument(
        "--monitor-name",
        action="append",
        metavar="NAME",
        help="every process of that name, e.g. gunicorn and its workers (repeatable)",
    )
    g.add_argument(
        "--monitor-cgroup",
        metavar="PATH",
        help="a cgroup v2, as /sys/fs/cgroup/... or as /proc/PID/cgroup names it",
    )
    g.add_argument(
        "--monitor-container",
        metavar="NAME",
        help="a Docker or Podman container (its cgroup v2: what `docker stats` shows)",
    )


# --- the monitor ---------------------------------------------------------------------------------


def _aggregate(series: list[Sample], keys: tuple[str, ...]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(peak, mean) of each metric over the samples that have it (None where none has)."""
    peak: dict[str, Any] = {}
    mean: dict[str, Any] = {}
    for k in keys:
        values = [s[k] for s in series if s.get(k) is not None]
        peak[k] = max(values) if values else None
        if not values:
            mean[k] = None
        elif k.endswith("_bytes"):
            mean[k] = round(sum(values) / len(values))
        else:
            mean[k] = round(sum(values) / len(values), 1)
    return peak, mean


class Monitor:
    """Samples its targets and the host every second on a daemon thread, each sample aligned with the
    load's time series: sample `t` covers [t0 + t, t0 + t + 1)."""

    def __init__(self, targets: list[_Target], interval: float = INTERVAL) -> None:
        self.targets = targets
        self.interval = interval
        self.host = _Host()
        self.table = _ProcTable() if any(isinstance(t, _Processes) for t in targets) else None
        self._series: list[list[Sample]] = [[] for _ in targets]
        self._host_series: list[Sample] = []
        self._errors: list[str | None] = [None for _ in targets]
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._thread: NativeThread | None = None
        self._t0 = 0.0
        self._mono0 = 0.0
        self._last: tuple[float, float] | None = None  # (monotonic, boottime) of the last reading
        self._last_t = -1
        self._cost_s = 0.0
        self._samples = 0

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Monitor | None:
        """The monitor the `--monitor-*` options ask for, None without any; UsageError (one line) for a
        process, name, cgroup or container that cannot be watched, before the run starts."""
        pids: list[int] = getattr(args, "monitor_pid", None) or []
        names: list[str] = getattr(args, "monitor_name", None) or []
        cgroup: str | None = getattr(args, "monitor_cgroup", None)
        container: str | None = getattr(args, "monitor_container", None)
        if not (pids or names or cgroup or container):
            return None
        if not os.path.isdir("/proc/self"):
            raise UsageError("--monitor-*: monitoring reads /proc, which this system lacks (Linux only)")
        targets: list[_Target] = []
        for pid in pids:
            st = _read_stat(pid) if pid > 0 else None
            if st is None:
                raise UsageError(f"--monitor-pid {pid}: no such process")
            targets.append(_Tree(pid, st.start, f"pid {pid} ({_process_name(pid, st.comm)})"))
        for name in names:
            if not name.strip():
                raise UsageError("--monitor-name takes a process name")
            target = _Named(name)
            table = _ProcTable()
            table.refresh(_boottime())
            if not target.members(table):
                raise UsageError(f"--monitor-name {name}: no process of that name is running")
            targets.append(target)
        if cgroup:
            path = resolve_cgroup(cgroup)
            targets.append(_Cgroup(path, f"cgroup {path}"))
        if container:
            targets.append(_Cgroup(resolve_container(container), f"container {container}"))
        return cls(targets)

    @property
    def cost_per_sample_s(self) -> float:
        """The mean CPU time one sample took, in seconds."""
        return self._cost_s / self._samples if self._samples else 0.0

    def start(self, t0_unix: float) -> None:
        """Starts sampling: the baseline at t0_unix (or now, if later), then a sample at the end of each
        whole second since t0_unix."""
        self._t0 = t0_unix
        self._mono0 = time.monotonic() - (time.time() - t0_unix)
        self._thread = NativeThread(self._run, "squall-monitor")  # real, whatever gevent patched
        self._thread.start()

    def _run(self) -> None:
        _name_os_thread("squall-monitor")
        if self._stopping.wait(max(0.0, self._mono0 - time.monotonic())):
            return
        self._prime()
        i = int((time.monotonic() - self._mono0) // self.interval)
        while not self._stopping.wait(max(0.0, self._mono0 + (i + 1) * self.interval - time.monotonic())):
            self._take(i)
            # A sample that came late (a starved host) skips the seconds it missed rather than bunching up.
            i = max(i + 1, int((time.monotonic() - self._mono0) // self.interval))

    def _prime(self) -> None:
        boot = _boottime()
        if self.table is not None:
            self.table.refresh(boot)
        for target in [*self.targets, self.host]:
            with contextlib.suppress(Exception):
                target.prime(self.table, boot)
        self._last = (time.monotonic(), boot)

    def _take(self, t: int) -> None:
        assert self._last is not None
        cost = time.thread_time()
        now, boot = time.monotonic(), _boottime()
        dt = now - self._last[0]
        boot_prev = self._last[1]
        if self.table is not None:
            with contextlib.suppress(OSError):
                self.table.refresh(boot)
        rows: list[Values] = []
        errors: list[str | None] = []
        for target in self.targets:
            try:
                rows.append(target.sample(self.table, boot_prev, dt))
                errors.append(None)
            except Exception as e:  # a monitor never stops the run
                rows.append(dict.fromkeys(METRICS, None))
                errors.append(f"{type(e).__name__}: {e}")
        try:
            host = self.host.sample(None, boot_prev, dt)
        except Exception:
            host = dict.fromkeys(HOST_METRICS, None)
        self._last = (now, boot)
        stamp = {"t": t, "unix": round(self._t0 + t * self.interval, 6)}
        with self._lock:
            for series, row in zip(self._series, rows):
                series.append({**stamp, **row})
            for i, error in enumerate(errors):
                if error and self._errors[i] is None:
                    self._errors[i] = error
            self._host_series.append({**stamp, **host})
            self._last_t = t
        self._cost_s += time.thread_time() - cost
        self._samples += 1

    def stop(self, last_t: int | None = None) -> dict[str, Any]:
        """Stops sampling (with a last sample for the part of a second since the last one, when it is
        long enough) and returns the `monitor` section of the result. `last_t`: the load's last second;
        samples after it (taken while a starved generator was still writing its result) are dropped, so
        that every sample lines up with a second of the load's time series."""
        thread, self._thread = self._thread, None
        if thread is not None:
            self._stopping.set()
            thread.join(timeout=10)
            if not thread.is_alive() and self._last is not None:
                now = time.monotonic()
                t = int((now - self._mono0) // self.interval)
                if t > self._last_t and now - self._last[0] >= MIN_PARTIAL * self.interval:
                    self._take(t)
        if last_t is not None:
            with self._lock:
                self._series = [[x for x in series if x["t"] <= last_t] for series in self._series]
                self._host_series = [x for x in self._host_series if x["t"] <= last_t]
        return self.latest()

    def stop_into(self, result: dict[str, Any]) -> None:
        """Stops sampling and puts the `monitor` section into `result`, its samples cut at the load's
        last second (the result's time series)."""
        seconds = result.get("timeseries") or []
        result["monitor"] = self.stop(seconds[-1]["t"] if seconds else None)

    def latest(self) -> dict[str, Any]:
        """The samples so far, shaped as the result's `monitor` section (thread-safe)."""
        with self._lock:
            series = [list(s) for s in self._series]
            host_series = list(self._host_series)
            errors = list(self._errors)
        return self._section(series, host_series, errors)

    def since(self, t: int) -> dict[str, Any]:
        """The samples from second `t` on (peak and mean still over all): for a live page that has
        the earlier ones."""
        with self._lock:
            full = [list(s) for s in self._series]
            host_full = list(self._host_series)
            errors = list(self._errors)
        doc = self._section(full, host_full, errors)
        for target in doc["targets"]:
            target["series"] = [s for s in target["series"] if s["t"] >= t]
        doc["host"]["series"] = [s for s in doc["host"]["series"] if s["t"] >= t]
        return doc

    def _section(self, series: list[list[Sample]], host: list[Sample], errors: list[str | None]) -> dict[str, Any]:
        targets = []
        for target, s, error in zip(self.targets, series, errors):
            peak, mean = _aggregate(s, METRICS)
            doc: dict[str, Any] = {"label": target.label, "series": s, "peak": peak, "mean": mean}
            if error:
                doc["error"] = error
            targets.append(doc)
        peak, mean = _aggregate(host, HOST_METRICS)
        return {
            "targets": targets,
            "host": {"cpus": self.host.cpus, "series": host, "peak": peak, "mean": mean},
        }


def _process_name(pid: int, comm: str) -> str:
    """The process's full name (psutil looks past the 15 characters of /proc/PID/stat)."""
    try:
        import psutil  # type: ignore[import-untyped]

        return str(psutil.Process(pid).name())
    except Exception:
        return comm


def _name_os_thread(name: str) -> None:
    """Names the calling thread for top -H and /proc (Python 3.11 does not)."""
    with contextlib.suppress(OSError), open(f"/proc/self/task/{threading.get_native_id()}/comm", "w") as f:
        f.write(name[:COMM_MAX])


# --- the console summary -------------------------------------------------------------------------


def _pct(v: Any) -> str:
    return "n/a" if v is None else f"{v:.1f}%"


def _num(v: Any, digits: int = 0) -> str:
    if v is None:
        return "n/a"
    return f"{v:,.{digits}f}" if isinstance(v, float) and digits else f"{round(v):,}"


def _size(v: Any) -> str:
    return "n/a" if v is None else size(v)


def summary(section: dict[str, Any]) -> str:
    """The console lines of a `monitor` section: peak and mean of each target and of the host."""
    rows: list[tuple[str, str]] = []
    for target in section.get("targets", []):
        p, m = target["peak"], target["mean"]
        if not target["series"]:
            rows.append((target["label"], "no samples"))
            continue
        text = (
            f"CPU {_pct(p['cpu_percent'])} / {_pct(m['cpu_percent'])}   "
            f"RSS {_size(p['rss_bytes'])} / {_size(m['rss_bytes'])}   "
            f"threads {_num(p['threads'])} / {_num(m['threads'], 1)}   "
            f"fds {_num(p['fds'])} / {_num(m['fds'], 1)}   "
            f"processes {_num(p['processes'])} / {_num(m['processes'], 1)}"
        )
        if target.get("error"):
            text += f"   (sampling failed: {target['error']})"
        rows.append((target["label"], text))
    host = section.get("host")
    if host and host["series"]:
        p, m = host["peak"], host["mean"]
        cpus = host.get("cpus")
        label = f"host ({cpus} core{'s' if cpus != 1 else ''})" if cpus else "host"
        rows.append(
            (
                label,
                f"CPU {_pct(p['cpu_percent'])} / {_pct(m['cpu_percent'])}"
                + (f" of {100 * cpus}%" if cpus else "")
                + f"   memory {_size(p['mem_used_bytes'])} / {_size(m['mem_used_bytes'])}"
                f" of {_size(p['mem_total_bytes'])}",
            )
        )
    if not rows:
        return ""
    width = max(len(label) for label, _ in rows)
    out = ["Resources    peak / mean, sampled every second (CPU: 100% is one core)"]
    out += [f"  {label:<{width}}  {text}" for label, text in rows]
    return "\n".join(out) + "\n"

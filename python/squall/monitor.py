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
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import os
import re
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Optional

from squall.errors import UsageError
from squall.gevent_hub import NativeThread
from squall.lateness import Lateness
from squall.report.units import ms, size

INTERVAL = 1.0  # seconds between samples; sample i covers [t0 + i, t0 + i + 1) like the timeseries' second i
METRICS = ("cpu_percent", "rss_bytes", "threads", "fds", "processes")
HOST_METRICS = ("cpu_percent", "mem_used_bytes", "mem_total_bytes")
CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
COMM_MAX = 15  # Linux keeps the first 15 bytes of a process's or thread's name
# A final sample covering less than this part of a second is not taken at stop(): too short to mean much.
MIN_PARTIAL = 0.25

Sample = dict[str, Any]
Values = dict[str, Optional[float]]


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


# --- /proc ---------------------------------------------------------------------------------------


@dataclass
class _Stat:
    """One process as /proc/PID/stat shows it (times in clock ticks)."""

    pid: int
    comm: str
    ppid: int
    own: int  # utime + stime
    reaped: int  # cutime + cstime: the children it waited for
    threads: int
    start: int  # clock ticks after boot
    rss_pages: int

    @property
    def key(self) -> tuple[int, int]:
        """Identifies the process, even after its pid is reused."""
        return self.pid, self.start


def parse_stat(pid: int, data: bytes) -> _Stat:
    """The fields of /proc/PID/stat (or /proc/PID/task/TID/stat) that monitoring uses."""
    close = data.rfind(b")")  # the name may hold spaces and parentheses
    comm = data[data.find(b"(") + 1 : close].decode("utf-8", "replace")
    f = data[close + 2 :].split(None, 22)  # f[0] is field 3 (state), so field n is f[n - 3]
    return _Stat(
        pid=pid,
        comm=comm,
        ppid=int(f[1]),
        own=int(f[11]) + int(f[12]),
        reaped=int(f[13]) + int(f[14]),
        threads=int(f[17]),
        start=int(f[19]),
        rss_pages=int(f[21]),
    )


def _read_stat(pid: int, tid: int | None = None) -> _Stat | None:
    path = f"/proc/{pid}/stat" if tid is None else f"/proc/{pid}/task/{tid}/stat"
    try:
        fd = os.open(path, os.O_RDONLY)  # half the cost of open(): this runs for every process each second
        try:
            data = os.read(fd, 4096)
        finally:
            os.close(fd)
        return parse_stat(pid if tid is None else tid, data)
    except (OSError, ValueError, IndexError):
        return None  # gone (or going) since it was listed


def _count_fds(pid: int) -> int | None:
    """Open descriptors: Linux 6.2 and later give their number as the size of /proc/PID/fd, at the cost
    of one stat (10,000 descriptors: 5 us, against 10 ms to list them); older ones give 0 there."""
    try:
        n = os.stat(f"/proc/{pid}/fd").st_size
        return n if n > 0 else len(os.listdir(f"/proc/{pid}/fd"))
    except (FileNotFoundError, ProcessLookupError):
        return 0  # gone
    except OSError:
        return None  # not ours to read


def _read_argv(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return [a.decode("utf-8", "replace") for a in f.read().split(b"\0") if a]
    except OSError:
        return []


def _boottime() -> float:
    """Seconds since boot on the clock of /proc's start times."""
    return time.clock_gettime(time.CLOCK_BOOTTIME)


_INTERPRETER = re.compile(r"^(python|pypy|node|nodejs|ruby|perl|php|java|bun|deno|sh|bash|dash)[0-9.]*$")


def name_matches(name: str, comm: str, argv: list[str]) -> bool:
    """Whether a process of name `comm` and command line `argv` is one `--monitor-name NAME` means: its
    name (also when longer than the 15 characters Linux keeps), its program (`/usr/bin/gunicorn`, or a
    title set with setproctitle such as `gunicorn: worker [app]`), or the script or module an
    interpreter runs (`python /venv/bin/gunicorn`, `python -m gunicorn`)."""
    if comm == name:
        return True
    words = argv[0].split() if argv else []
    if words and os.path.basename(words[0]).rstrip(":") == name:
        return True
    if words and _INTERPRETER.match(os.path.basename(words[0])) and len(argv) > 1:
        if argv[1] == "-m":
            return len(argv) > 2 and argv[2] == name
        return os.path.basename(argv[1]) == name
    return False


class _ProcTable:
    """The system's processes: pid -> its stat, read when the pid first shows up (and again while the
    process is young, as a fork's exec renames it); and the children of each pid."""

    YOUNG_S = 2.0

    def __init__(self) -> None:
        self.procs: dict[int, _Stat] = {}
        self.children: dict[int, list[int]] = {}
        self.young: set[int] = set()

    def refresh(self, boot_now: float) -> None:
        pids = {int(e) for e in os.listdir("/proc") if e.isdigit()}
        old = self.procs
        gone = old.keys() - pids
        fresh = (pids - old.keys()) | (self.young & pids)
        if not gone and not fresh:
            return
        procs = {pid: st for pid, st in old.items() if pid in pids and pid not in fresh}
        young_after = (boot_now - self.YOUNG_S) * CLK_TCK
        self.young = set()
        for pid in fresh:
            st = _read_stat(pid)
            if st is not None:
                procs[pid] = st
                if st.start > young_after:
                    self.young.add(pid)
        children: dict[int, list[int]] = {}
        for pid, st in procs.items():
            children.setdefault(st.ppid, []).append(pid)
        self.procs, self.children = procs, children


# --- targets -------------------------------------------------------------------------------------


class _Target:
    """Something sampled every second into `METRICS`."""

    label = ""

    def prime(self, table: _ProcTable | None, boot: float) -> None:
        """Takes the readings the first sample's deltas start from."""

    def sample(self, table: _ProcTable | None, boot_prev: float, dt: float) -> Values:
        raise NotImplementedError


@dataclass
class _Owed:
    ticks: int
    expires: int  # the sample index after which it is dropped


class _Processes(_Target):
    """A set of processes found anew every second (`members`), their CPU from the deltas of their
    times: each live process's own time, the children it reaped (less what was counted while those
    lived), and all the time of a process born since the last sample."""

    OWED_SAMPLES = 3  # a parent reaps an exited child within this many samples, or its debt is dropped

    def __init__(self, label: str) -> None:
        self.label = label
        self.prev: dict[tuple[int, int], _Stat] = {}
        self.owed: dict[int, list[_Owed]] = {}
        self.n = 0

    def members(self, table: _ProcTable) -> list[int]:
        raise NotImplementedError

    def _current(self, table: _ProcTable) -> dict[tuple[int, int], _Stat]:
        current = {}
        for pid in self.members(table):
            st = _read_stat(pid)
            if st is not None:
                current[st.key] = st
        return current

    def prime(self, table: _ProcTable | None, boot: float) -> None:
        assert table is not None
        self.prev = self._current(table)

    def sample(self, table: _ProcTable | None, boot_prev: float, dt: float) -> Values:
        assert table is not None
        self.n += 1
        current = self._current(table)
        live_pids = {pid for pid, _ in current}
        # An exited process's last total is already counted; its parent's reaped time will grow by it.
        for key, st in self.prev.items():
            if key not in current and st.ppid in live_pids:
                self.owed.setdefault(st.ppid, []).append(_Owed(st.own + st.reaped, self.n + self.OWED_SAMPLES))
        ticks = 0
        born_after = boot_prev * CLK_TCK - 1  # start times are whole ticks
        for key, st in current.items():
            old = self.prev.get(key)
            if old is not None:
                ticks += max(0, st.own - old.own) + self._pay(key[0], max(0, st.reaped - old.reaped))
            elif st.start >= born_after:
                ticks += st.own + st.reaped  # born since the last sample: all its time is new
            # else: seen for the first time but older (renamed, adopted): its times are the baseline
        for pid in list(self.owed):
            self.owed[pid] = [o for o in self.owed[pid] if o.expires >= self.n and pid in live_pids]
            if not self.owed[pid]:
                del self.owed[pid]
        self.prev = current
        fds: float | None = 0
        for pid, _ in current:
            n = _count_fds(pid)
            fds = None if n is None or fds is None else fds + n
        return {
            "cpu_percent": round(100.0 * ticks / CLK_TCK / dt, 1) if dt > 0 else None,
            "rss_bytes": sum(st.rss_pages for st in current.values()) * PAGE_SIZE,
            "threads": sum(st.threads for st in current.values()),
            "fds": fds,
            "processes": len(current),
        }

    def _pay(self, pid: int, reaped: int) -> int:
        """The part of a parent's new reaped time not counted already, while its exited children lived."""
        for o in self.owed.get(pid, []):
            paid = min(o.ticks, reaped)
            o.ticks -= paid
            reaped -= paid
        if pid in self.owed:
            self.owed[pid] = [o for o in self.owed[pid] if o.ticks > 0]
        return reaped


class _Tree(_Processes):
    """`--monitor-pid`: a process and its descendants, including those whose parent has exited."""

    def __init__(self, pid: int, start: int, label: str) -> None:
        super().__init__(label)
        self.root = (pid, start)

    def members(self, table: _ProcTable) -> list[int]:
        found = [pid for pid, start in self.prev if pid in table.procs and table.procs[pid].start == start]
        root = table.procs.get(self.root[0])
        if root is not None and root.start == self.root[1] and self.root[0] not in found:
            found.append(self.root[0])
        seen = set(found)
        i = 0
        while i < len(found):
            for child in table.children.get(found[i], ()):
                if child not in seen:
                    seen.add(child)
                    found.append(child)
            i += 1
        return found


class _Named(_Processes):
    """`--monitor-name`: every process of that name but squall itself."""

    def __init__(self, name: str) -> None:
        super().__init__(f"name {name}")
        self.name = name
        self.decided: dict[tuple[int, int], bool] = {}
        self.me = os.getpid()

    def matches(self, st: _Stat, boot: float) -> bool:
        young = boot - st.start / CLK_TCK < _ProcTable.YOUNG_S
        key = st.key
        if key not in self.decided or young:
            self.decided[key] = st.pid != self.me and (
                st.comm == self.name or name_matches(self.name, st.comm, _read_argv(st.pid))
            )
        return self.decided[key]

    def members(self, table: _ProcTable) -> list[int]:
        boot = _boottime()
        found = [pid for pid, st in table.procs.items() if self.matches(st, boot)]
        live = {st.key for st in table.procs.values()}
        self.decided = {k: v for k, v in self.decided.items() if k in live}
        return found


class _Cgroup(_Target):
    """A cgroup v2: CPU from cpu.stat's usage_usec, memory as `docker stats` (memory.current less
    inactive_file), threads from pids.current; without those controllers, the sums over its processes."""

    def __init__(self, path: str, label: str) -> None:
        self.path = path
        self.label = label
        self.prev_usage: int | None = None

    def _file(self, name: str) -> str | None:
        try:
            with open(os.path.join(self.path, name)) as f:
                return f.read()
        except OSError:
            return None

    def _pids(self) -> list[int]:
        pids: list[int] = []
        for d, _, _ in os.walk(self.path):
            with contextlib.suppress(OSError), open(os.path.join(d, "cgroup.procs")) as f:
                pids.extend(int(x) for x in f.read().split())
        return pids

    def prime(self, table: _ProcTable | None, boot: float) -> None:
        self.prev_usage = cpu_usage_usec(self._file("cpu.stat") or "")

    def sample(self, table: _ProcTable | None, boot_prev: float, dt: float) -> Values:
        usage = cpu_usage_usec(self._file("cpu.stat") or "")
        if usage is None:  # the cgroup is gone (the container stopped)
            self.prev_usage = None
            return dict.fromkeys(METRICS, None)
        cpu = None
        if self.prev_usage is not None and dt > 0:
            cpu = round(100.0 * (usage - self.prev_usage) / 1e6 / dt, 1)
        self.prev_usage = usage
        pids = self._pids()
        stats = [st for st in map(_read_stat, pids) if st is not None]
        fds: float | None = 0
        for pid in pids:
            n = _count_fds(pid)
            fds = None if n is None or fds is None else fds + n
        rss = memory_usage(self._file("memory.current"), self._file("memory.stat"))
        if rss is None:
            rss = sum(st.rss_pages for st in stats) * PAGE_SIZE
        tasks = self._file("pids.current")
        return {
            "cpu_percent": cpu,
            "rss_bytes": rss,
            "threads": int(tasks) if tasks and tasks.strip().isdigit() else sum(st.threads for st in stats),
            "fds": fds,
            "processes": len(stats),
        }


def cpu_usage_usec(cpu_stat: str) -> int | None:
    """`usage_usec` of a cgroup v2 cpu.stat (None in a v1 cpu.stat, which has none)."""
    for line in cpu_stat.splitlines():
        key, _, value = line.partition(" ")
        if key == "usage_usec":
            return int(value)
    return None


def memory_usage(current: str | None, stat: str | None) -> int | None:
    """What `docker stats` shows as a cgroup v2's memory usage: memory.current less inactive_file."""
    if not current or not current.strip().isdigit():
        return None
    used = int(current)
    for line in (stat or "").splitlines():
        key, _, value = line.partition(" ")
        if key == "inactive_file" and value.strip().isdigit():
            return max(0, used - int(value))
    return used


class _Host(_Target):
    label = "host"

    def __init__(self) -> None:
        import psutil  # type: ignore[import-untyped]

        self.psutil = psutil
        self.cpus = int(psutil.cpu_count() or 1)
        self.prev: tuple[float, float] | None = None

    def _times(self) -> tuple[float, float]:
        """(busy, total) CPU seconds of all cores since boot, as psutil.cpu_percent counts them."""
        t = self.psutil.cpu_times()
        total = float(sum(t)) - float(getattr(t, "guest", 0.0)) - float(getattr(t, "guest_nice", 0.0))
        idle = float(t.idle) + float(getattr(t, "iowait", 0.0))
        return total - idle, total

    def prime(self, table: _ProcTable | None, boot: float) -> None:
        self.prev = self._times()

    def sample(self, table: _ProcTable | None, boot_prev: float, dt: float) -> Values:
        busy, total = self._times()
        cpu = None
        if self.prev is not None and total > self.prev[1]:
            cpu = round(100.0 * self.cpus * (busy - self.prev[0]) / (total - self.prev[1]), 1)
        self.prev = busy, total
        mem = self.psutil.virtual_memory()
        return {
            "cpu_percent": cpu,
            "mem_used_bytes": int(mem.total) - int(mem.available),
            "mem_total_bytes": int(mem.total),
        }


# --- cgroups and containers ----------------------------------------------------------------------


def cgroup2_mount(mountinfo: str | None = None) -> str | None:
    """Where the cgroup v2 hierarchy is mounted (/sys/fs/cgroup, or /sys/fs/cgroup/unified on a hybrid
    host), from /proc/self/mountinfo."""
    if mountinfo is None:
        try:
            with open("/proc/self/mountinfo") as f:
                mountinfo = f.read()
        except OSError:
            return None
    for line in mountinfo.splitlines():
        left, sep, right = line.partition(" - ")
        if sep and right.split()[:1] == ["cgroup2"]:
            return left.split()[4].replace("\\040", " ")
    return None


def cgroup_of(pid: int) -> str | None:
    """The cgroup v2 path of a process, as /proc/PID/cgroup gives it (`0::/system.slice/x.scope`)."""
    try:
        with open(f"/proc/{pid}/cgroup") as f:
            for line in f:
                if line.startswith("0::"):
                    return line[3:].strip()
    except OSError:
        pass
    return None


def resolve_cgroup(path: str) -> str:
    """The directory of a cgroup v2 given as a path under its mount or as /proc/PID/cgroup names it
    (UsageError, one line, if it is no cgroup v2)."""
    mount = cgroup2_mount()
    candidates = [path] if os.path.isabs(path) else []
    if mount:
        candidates.append(os.path.join(mount, path.lstrip("/")))
    for c in candidates:
        if os.path.isdir(c) and os.path.exists(os.path.join(c, "cgroup.procs")):
            cpu_stat = ""
            with contextlib.suppress(OSError), open(os.path.join(c, "cpu.stat")) as f:
                cpu_stat = f.read()
            if cpu_usage_usec(cpu_stat) is None:
                raise UsageError(f"--monitor-cgroup {path}: not a cgroup v2 (its cpu.stat has no usage_usec)")
            return os.path.normpath(c)
    if mount is None:
        raise UsageError(f"--monitor-cgroup {path}: this machine has no cgroup v2 hierarchy mounted")
    raise UsageError(f"--monitor-cgroup {path}: no such cgroup v2 (looked in {', '.join(candidates)})")


INSPECT_TIMEOUT = 15.0


def resolve_container(name: str) -> str:
    """The cgroup v2 directory of a running Docker or Podman container, from `docker inspect` (or
    `podman inspect`) and its main process's /proc/PID/cgroup."""
    tool = next((t for t in ("docker", "podman") if shutil.which(t)), None)
    if tool is None:
        raise UsageError(
            f"--monitor-container {name}: neither docker nor podman is installed here "
            "(give the container's cgroup with --monitor-cgroup PATH)"
        )
    cmd = [tool, "inspect", "--type", "container", "--format", "{{.State.Pid}} {{.Id}}", name]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=INSPECT_TIMEOUT)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise UsageError(f"--monitor-container {name}: {tool} inspect failed: {e}") from None
    if done.returncode != 0:
        lines = (done.stderr or done.stdout).strip().splitlines()
        why = lines[0] if lines else f"exit code {done.returncode}"
        raise UsageError(f"--monitor-container {name}: {tool} inspect: {why}")
    fields = done.stdout.split()
    if len(fields) != 2 or not fields[0].isdigit():
        raise UsageError(f"--monitor-container {name}: unexpected answer from {tool} inspect: {done.stdout.strip()!r}")
    pid, cid = int(fields[0]), fields[1]
    if pid == 0:
        raise UsageError(f"--monitor-container {name}: the container is not running")
    mount = cgroup2_mount()
    path = cgroup_of(pid)
    if mount is None or path is None:
        raise UsageError(
            f"--monitor-container {name}: its process {pid} is in no cgroup v2 (a cgroup v1 host is not supported)"
        )
    if cid not in path:  # e.g. a hybrid host that keeps containers in v1: v2 holds only the daemon's cgroup
        raise UsageError(
            f"--monitor-container {name}: its cgroup v2 ({path}) is not the container's own "
            "(cgroup v1 host?); give it with --monitor-cgroup PATH"
        )
    return resolve_cgroup(path)


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
        import psutil

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


# --- the generator watching itself ---------------------------------------------------------------

SATURATED_PERCENT = 90.0  # a thread this busy for SATURATED_FOR seconds in a row is saturated
SATURATED_FOR = 3
LAG_WINDOW = 5  # seconds
LAG_GROWN_US = 10_000  # a growing lag worth a warning ends at least this high
ENGINE_PREFIXES = ("squall-worker", "squall-mqtt", "squall-feeder", "squall-coordinator", "squall-subscriber")
# The engine's thread names that Linux cuts to 15 characters, whole again. (squall-worker-10 and up
# cannot be told from squall-worker-1: several threads of one name are shown with their thread ids.)
FULL_NAMES = {"squall-coordina": "squall-coordinator", "squall-subscrib": "squall-subscriber"}
NOT_SQUALL = ("squall-demo", "squall-monitor")  # the built-in demo target, and the monitor itself
ADVICE = "the limit measured may be squall's, not the target's (use --threads, --processes or a bigger machine)"


@dataclass
class _Load:
    """One thread's (or the process's) CPU over the run, and how long it stayed saturated."""

    name: str
    n: int = 0
    total: float = 0.0
    peak: float = 0.0
    run: list[float] = field(default_factory=list)  # the current stretch of saturated seconds
    saturated_s: int = 0
    saturated_total: float = 0.0
    threshold: float = SATURATED_PERCENT

    def add(self, percent: float) -> None:
        self.n += 1
        self.total += percent
        self.peak = max(self.peak, percent)
        if percent < self.threshold:
            self.run = []
            return
        self.run.append(percent)
        if len(self.run) == SATURATED_FOR:
            self.saturated_s += SATURATED_FOR
            self.saturated_total += sum(self.run)
        elif len(self.run) > SATURATED_FOR:
            self.saturated_s += 1
            self.saturated_total += percent

    @property
    def mean(self) -> float:
        return self.total / self.n if self.n else 0.0

    @property
    def saturated_mean(self) -> float:
        return self.saturated_total / self.saturated_s if self.saturated_s else 0.0


class GeneratorWatch:
    """squall watching itself: the CPU of each of its threads, and the send lag of paced loads, to warn
    when the generator, not the target, is what limits the run. Fed once a second by the driving loop
    (`sample`); cheap: one small /proc read per thread. Late sends warn by `squall.lateness`'s rule
    (sustained or material); a mean lag that grows every second for LAG_WINDOW seconds, to 10 ms or
    more and at least twice where it began, warns too."""

    def __init__(self, pid: int | None = None, *, cpus: int | None = None) -> None:
        """Watches process `pid` (default: this one), which may use `cpus` cores (default: the cores
        its affinity allows)."""
        self.pid = os.getpid() if pid is None else pid
        self.own = self.pid == os.getpid()
        if cpus is None:
            try:
                cpus = len(os.sched_getaffinity(self.pid))
            except (AttributeError, OSError):
                cpus = os.cpu_count() or 1
        self.cpus = cpus
        self.threads: dict[int, _Load] = {}
        self.process = _Load("process", threshold=SATURATED_PERCENT * self.cpus)
        self.has_cpu = False  # whether thread CPU was ever measured
        self._prev: dict[int, int] | None = None  # tid -> ticks
        self._prev_mono = 0.0
        self._n = 0
        self._lags: collections.deque[tuple[int, float]] = collections.deque(maxlen=LAG_WINDOW)  # (t, mean lag)
        self.lateness = Lateness()
        self.last_t = -1
        self.worst_growth: tuple[float, float, int, int] | None = None  # (from us, to us, first, last)
        self._cost_s = 0.0
        self._samples = 0

    @property
    def cost_per_sample_s(self) -> float:
        return self._cost_s / self._samples if self._samples else 0.0

    def _read_threads(self) -> dict[int, tuple[str, int]] | None:
        """{tid: (name, utime + stime ticks)} of the process's threads; None if it is gone."""
        try:
            tids = [int(x) for x in os.listdir(f"/proc/{self.pid}/task")]
        except OSError:
            return None
        out = {}
        for tid in tids:
            st = _read_stat(self.pid, tid)
            if st is not None:
                out[tid] = (st.comm, st.own)
        return out

    def _names(self, read: dict[int, tuple[str, int]]) -> dict[int, str]:
        """The name shown for each thread: 'main' for the main thread; in squall's own process the
        Python name of a thread the OS knows only by the process's name."""
        python = {t.native_id: t.name for t in threading.enumerate()} if self.own else {}
        process_comm = read[self.pid][0] if self.pid in read else None
        names = {}
        for tid, (comm, _) in read.items():
            if tid == self.pid:
                names[tid] = "main"
            elif comm == process_comm and tid in python:
                names[tid] = python[tid]
            else:
                names[tid] = FULL_NAMES.get(comm, comm)
        return names

    def sample(self, points: list[dict[str, Any]]) -> None:
        """Once a second from the driving loop, with the points the live stream published since the last
        call (none, one, or several when the stream fell behind): the threads' CPU is measured once, for
        the newest; each point's sends are judged."""
        cost = time.thread_time()
        now = time.monotonic()
        for point in points[:-1]:
            self._take_schedule(point)
        newest = points[-1] if points else None
        t = newest.get("t") if newest else None
        if not isinstance(t, int):
            t = self.last_t + 1
        cpu: dict[int, tuple[str, float]] | None = None
        read = self._read_threads()
        if read is not None:
            if self._prev is None:
                self._prev, self._prev_mono = {tid: v[1] for tid, v in read.items()}, now
            elif now - self._prev_mono >= 0.5 * INTERVAL:  # a shorter interval waits for the next call
                dt = now - self._prev_mono
                names = self._names(read)
                cpu = {
                    tid: (names[tid], 100.0 * (ticks - self._prev.get(tid, 0)) / CLK_TCK / dt)
                    for tid, (_, ticks) in read.items()
                }
                self._prev, self._prev_mono = {tid: v[1] for tid, v in read.items()}, now
        schedule = newest.get("schedule") if newest else None
        self.feed(t, cpu, schedule if isinstance(schedule, dict) else None)
        self._cost_s += time.thread_time() - cost
        self._samples += 1

    def _take_schedule(self, point: dict[str, Any]) -> None:
        t, schedule = point.get("t"), point.get("schedule")
        if isinstance(t, int):
            self.feed(t, None, schedule if isinstance(schedule, dict) else None)

    def end(self) -> None:
        """The run has ended: its lateness is judged on the whole run (`squall.lateness`)."""
        self.lateness.end()

    def feed(
        self,
        t: int,
        threads: dict[int, tuple[str, float]] | None,
        schedule: dict[str, Any] | None,
    ) -> None:
        """Takes one second: `threads` {tid: (name, CPU %)} (None when not measured) and the second's
        `schedule` {sent, late, mean_lag_us, ...} of a paced load (None without one)."""
        self.last_t = max(self.last_t, t)
        if threads is not None:
            self.has_cpu = True
            for tid, (name, percent) in threads.items():
                load = self.threads.setdefault(tid, _Load(name))
                load.name = name
                load.add(percent)
            self.process.add(sum(p for name, p in threads.values() if not name.startswith(NOT_SQUALL)))
        if schedule is None or not schedule.get("sent"):
            return
        late, lag = int(schedule.get("late", 0)), float(schedule.get("mean_lag_us", 0))
        self.lateness.add(t, int(schedule.get("sent", 0)), late, int(schedule.get("max_lag_us", 0)))
        self._lags.append((t, lag))
        lags = [x[1] for x in self._lags]
        growing = len(lags) == LAG_WINDOW and all(b > a for a, b in zip(lags, lags[1:]))
        grown = growing and lags[-1] >= LAG_GROWN_US and lags[-1] >= 2 * lags[0]
        if grown and (self.worst_growth is None or lags[-1] > self.worst_growth[1]):
            self.worst_growth = (lags[0], lags[-1], self._lags[0][0], self._lags[-1][0])

    def _squall_threads(self) -> list[tuple[int, _Load]]:
        return [(tid, load) for tid, load in sorted(self.threads.items()) if not load.name.startswith(NOT_SQUALL)]

    @property
    def saturated(self) -> bool:
        """Whether a thread of squall, or squall as a whole, ran out of CPU for SATURATED_FOR seconds."""
        return any(load.saturated_s for _, load in self._squall_threads()) or self.process.saturated_s > 0

    def _shown(self) -> dict[int, str]:
        """Thread names made unique (Linux cuts them to 15 characters: squall-worker-1x all read
        'squall-worker-1'): a name shared by several threads gets their thread ids."""
        counts = collections.Counter(load.name for load in self.threads.values())
        return {
            tid: f"{load.name} (tid {tid})" if counts[load.name] > 1 else load.name
            for tid, load in self.threads.items()
        }

    def _when(self, first: int, last: int) -> str:
        span = last - first + 1
        return f"in the last {span} s" if last == self.last_t else f"in {span} s (seconds {first}-{last})"

    def warnings(self) -> list[str]:
        """One line each: the generator ran out of CPU; sends fell behind the schedule; the send lag kept
        growing. Empty when squall kept up."""
        out = []
        shown = self._shown()
        hot = [(tid, load) for tid, load in self._squall_threads() if load.saturated_s]
        if hot:
            tid, load = max(hot, key=lambda x: (x[1].saturated_s, x[1].saturated_mean))
            name = shown[tid]
            kind = "engine thread" if load.name.startswith(ENGINE_PREFIXES) else "thread"
            if load.name == "main":
                kind, name = "Python's main thread", "main"
            more = f" (and {len(hot) - 1} other thread{'s' if len(hot) > 2 else ''})" if len(hot) > 1 else ""
            out.append(
                f"the generator saturated: {kind} '{name}' at {load.saturated_mean:.0f}% CPU for "
                f"{load.saturated_s} s{more}; {ADVICE}"
            )
        elif self.process.saturated_s:
            p = self.process
            out.append(
                f"the generator saturated: squall used {p.saturated_mean:.0f}% CPU of {self.cpus} "
                f"core{'s' if self.cpus != 1 else ''} for {p.saturated_s} s; {ADVICE}"
            )
        if self.saturated:
            why = "; squall was short of CPU (above)"
        elif self.has_cpu:
            why = (
                "; squall's threads were not short of CPU, so too few connections (or in-flight slots) "
                "or a slow target held the sends back"
            )
        else:
            why = "; too few connections (or in-flight slots), a slow target or a busy generator"
        late = self.lateness.warning(self._when, why)
        if late is not None:
            out.append(late)
        if self.worst_growth is not None:
            a, b, first, last = self.worst_growth
            out.append(f"the send lag kept growing: mean {ms(a)} ms to {ms(b)} ms {self._when(first, last)}{why}")
        return out

    def to_json(self) -> dict[str, Any]:
        """The `generator` section of a result: each thread's CPU, the warnings, and whether squall ran
        out of CPU."""
        shown = self._shown()
        return {
            "threads": [
                {
                    "name": shown[tid],
                    "cpu_percent_mean": round(load.mean, 1),
                    "cpu_percent_peak": round(load.peak, 1),
                    "saturated_s": load.saturated_s,
                }
                for tid, load in sorted(self.threads.items())
            ],
            # Null until a sample interval was measured: a run shorter than that has no CPU to show,
            # not 0% (the page says why).
            "process": {
                "cpu_percent_mean": round(self.process.mean, 1) if self.has_cpu else None,
                "cpu_percent_peak": round(self.process.peak, 1) if self.has_cpu else None,
                "cpus": self.cpus,
            },
            "warnings": self.warnings(),
            "saturated": self.saturated,
            "lateness": self.lateness.to_json(),
        }

"""The target's processes as /proc tells them: one process's stat line, its descriptors and argv, the
process table of a sample, and what every monitored target is (`_Target`)."""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass
from typing import Any, Optional

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

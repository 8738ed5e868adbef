"""`--monitor-cgroup` and `--monitor-container`: a cgroup v2 read from /sys/fs/cgroup (its CPU and memory
count everything exactly, exited processes included), and a container found by its main process's cgroup."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess

from squall.errors import UsageError
from squall.monitor.procfs import METRICS, PAGE_SIZE, Values, _count_fds, _ProcTable, _read_stat, _Target


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

"""`--monitor-pid` and `--monitor-name`: a set of processes found anew every second, their CPU from the
deltas of their times (children reaped by a parent counted once)."""

from __future__ import annotations

import os
from dataclasses import dataclass

from squall.monitor import procfs
from squall.monitor.procfs import (
    PAGE_SIZE,
    Values,
    _boottime,
    _count_fds,
    _ProcTable,
    _read_argv,
    _read_stat,
    _Stat,
    _Target,
    name_matches,
)


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
        born_after = boot_prev * procfs.CLK_TCK - 1  # start times are whole ticks
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
            "cpu_percent": round(100.0 * ticks / procfs.CLK_TCK / dt, 1) if dt > 0 else None,
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
        young = boot - st.start / procfs.CLK_TCK < _ProcTable.YOUNG_S
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

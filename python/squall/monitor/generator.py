"""squall watching itself: each engine thread's CPU and the schedule's lag, so that nobody takes squall's
own limit for the target's."""

from __future__ import annotations

import collections
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from squall.monitor import procfs
from squall.monitor.procfs import INTERVAL, _read_stat
from squall.report.units import ms
from squall.runtime.lateness import Lateness

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


def resident(pid: int | None = None) -> int | None:
    """Process `pid`'s resident memory now (default: this process's), in bytes."""
    return _memory(os.getpid() if pid is None else pid, "VmRSS")


def _memory(pid: int, field: str) -> int | None:
    """A memory figure of /proc/PID/status (VmRSS: resident now; VmHWM: its peak), in bytes."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


class GeneratorWatch:
    """squall watching itself: the CPU of each of its threads, and the send lag of paced loads, to warn
    when the generator, not the target, is what limits the run. Fed once a second by the driving loop
    (`sample`); cheap: one small /proc read per thread. Late sends warn by `squall.runtime.lateness`'s rule
    (sustained or material); a mean lag that grows every second for LAG_WINDOW seconds, to 10 ms or
    more and at least twice where it began, warns too."""

    def __init__(self, pid: int | None = None, *, cpus: int | None = None, rss_start: int | None = None) -> None:
        """Watches process `pid` (default: this one), which may use `cpus` cores (default: the cores
        its affinity allows); `rss_start`: its resident memory before the run (default: now)."""
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
        self.rss_start = rss_start or resident(self.pid)  # before the run's connections (their growth)

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
                    tid: (names[tid], 100.0 * (ticks - self._prev.get(tid, 0)) / procfs.CLK_TCK / dt)
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

    def end(self, timeseries: list[dict[str, Any]] | None = None) -> None:
        """The run has ended: its lateness is judged on the whole run (`squall.runtime.lateness`), from
        its result's `timeseries` when it has one: the seconds as the result holds them, where the live
        stream may have published a second before all its sends were counted, and an open model's
        last seconds come after the stream's end (a locustfile's overloaded `--rate` run warned of 50
        sends, 45 late, beside its result's 200 and 195)."""
        seconds = [(p["t"], p["schedule"]) for p in timeseries or () if isinstance(p.get("schedule"), dict)]
        if seconds:
            self.lateness = Lateness()
            for t, schedule in seconds:
                sent, late, lag = (int(schedule.get(k, 0)) for k in ("sent", "late", "max_lag_us"))
                self.lateness.add(t, sent, late, lag)
            self.last_t = max(self.last_t, seconds[-1][0])
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
                # The resident memory when the watch began and its peak (the kernel's high-water mark):
                # what the run's connections and statistics cost (`squall bench` says it per connection).
                "rss_start_bytes": self.rss_start,
                "rss_peak_bytes": _memory(self.pid, "VmHWM"),
            },
            "warnings": self.warnings(),
            "saturated": self.saturated,
            "lateness": self.lateness.to_json(),
        }

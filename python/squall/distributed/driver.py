"""The driver of a distributed run: places one Ray actor per worker (squall.distributed.actor), follows
them once a second, shows the whole cluster live (console line, dashboard, partial files,
`--threshold-abort`), handles lost workers (`--on-worker-loss`), and merges their results losslessly
into one result, which the command prints and writes as it does a local run's, with a `workers` list.

Policies, and why:
- Placement: one CPU per worker while the cluster has that many (Ray then spreads them over the
  nodes, `SPREAD`), none when more workers than CPUs are asked for (they share the CPUs, as
  `--processes` beyond the cores does). A worker that replaces a lost one asks for none: the lost
  node's CPUs are gone, and its share goes to the nodes that remain.
- Following: one poll per worker per second, never more than one in flight; the driver's cost is a
  Ray call and the new seconds and totals per worker per second (measured in docs/distributed.md).
- A worker is lost when its actor dies (Ray says so), when its process dies of a signal nobody sent,
  or when it has not answered for `SILENT_S`. The loss is reported at once (stderr, and the result's
  `workers`), with what the worker had reported. Its counts are not in the merged totals: those merge
  the workers' result documents, and a lost worker sent none, only its live seconds and totals
  (`distributed.lost_requests` says how many requests they held).
- Ctrl-C or SIGTERM stops every worker (they still report); a second one kills them. Whatever
  happens, the actors are killed and the driver disconnects before it returns, and a driver killed
  outright takes its actors with it (Ray ends a job's actors with its driver; the workers end with
  their actors, squall.distributed.feed)."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import signal
import sys
import time
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from squall import _engine, exitcodes
from squall.distributed import cluster, shares
from squall.distributed.actor import Worker
from squall.distributed.stream import LiveMerge
from squall.distributed.workers import Command, WorkerState, entry, table
from squall.report.progress import page_fields
from squall.runtime.follow import Follower, Why
from squall.runtime.lifecycle import Lifecycle
from squall.runtime.signals import deferred
from squall.web import live as web_live

TICK = 0.25  # seconds between looks at signals, answers and the console
POLL_EVERY = 1.0  # seconds between polls of a worker
SILENT_S = 10.0  # a worker that has not answered for this long is lost
PLACE_TIMEOUT = 60.0  # seconds without a worker starting before placing them fails
STARTUP_S = 1.5  # seconds from the workers' start to their engines' common start
STARTUP_PER_EXTRA_S = 0.5  # and this much more for each worker per CPU beyond one
STOP_GRACE = 30.0  # after a stop, workers still running then are killed
RESULT_TIMEOUT = 60.0  # seconds to fetch a finished worker's result
EXPECTED_CODES = (0, 1, 4, 99, 130, 143)  # a worker's own verdicts (squall.exitcodes)
MQTT_PHASES = ("connecting", "running", "draining", "closed")


# The driver's flags, not the workers': with a value, and without (Locust's master and worker roles).
DRIVER_FLAGS = (
    "--ray",
    "--workers",
    "--on-worker-loss",
    "--expect-workers",
    "--expect-workers-max-wait",
    "--master-bind-host",
    "--master-bind-port",
    "--master-host",
    "--master-port",
)
DRIVER_SWITCHES = ("--master", "--worker")


def worker_argv(argv: list[str]) -> list[str]:
    """The command line a worker runs: the driver's, without the distributed flags."""
    out: list[str] = []
    skip = False
    for a in argv:
        if skip:
            skip = False
        elif a in DRIVER_FLAGS:
            skip = True
        elif a not in DRIVER_SWITCHES and not a.startswith(tuple(f + "=" for f in DRIVER_FLAGS)):
            out.append(a)
    return out


def run(args: argparse.Namespace, command: Command) -> int:
    """Runs `command` on the cluster `args.ray` names with `args.workers` workers; returns the exit code."""
    try:
        ray = cluster.connect(args.ray)
    except cluster.ClusterError as e:
        sys.stderr.write(f"squall: error: {e}\n")
        return exitcodes.CANNOT_START
    driver: Driver | None = None
    try:
        if command.prepare is not None:
            command.prepare(ray)
        driver = Driver(ray, args, command)
        return driver.run()
    except cluster.ClusterError as e:
        sys.stderr.write(f"squall: error: {e}\n")
        return exitcodes.CANNOT_START
    finally:
        if driver is not None:
            driver.cleanup()
        cluster.disconnect(ray)


class Driver:
    def __init__(self, ray: ModuleType, args: argparse.Namespace, command: Command) -> None:
        self.ray, self.args, self.command = ray, args, command
        # the CPUs that can host a worker (with `placement`, the units of that resource the nodes offer)
        self.cpus = cluster.cpus(ray) if command.placement is None else cluster.offered(ray, command.placement)
        self.n = int(args.workers) if args.workers else self.cpus
        shares.check_workers(self.n, command.units, command.what)
        self.shares = command.shares(self.n)
        self.on_loss: str = args.on_worker_loss
        self.argv = worker_argv(list(getattr(args, "argv", None) or sys.argv[1:]))
        self.workers: list[WorkerState] = []
        self.merge = LiveMerge()
        store = command.dashboard.store if command.dashboard is not None else None
        publisher = web_live.Publisher(self.merge.read, store, command.partial, None, command.monitor)
        self.follower = Follower(self, publisher, command.dashboard, command.watch)
        self.life = Lifecycle(self)
        self.next_poll = 0.0
        self.stopping_since: float | None = None
        self.stopped_by_loss = False
        self.polls = 0

    # -- placing -------------------------------------------------------------------------------------

    def _actor(self, index: int, slot: int, num_cpus: float, env: dict[str, str]) -> Any:
        options: dict[str, Any] = {"scheduling_strategy": "SPREAD", "max_restarts": 0, "max_task_retries": 0}
        if self.command.placement is None:
            options["num_cpus"] = num_cpus
        else:  # on the nodes that offer the resource, as many workers as it has units (or all share them)
            options["num_cpus"] = 0
            options["resources"] = {self.command.placement: 1.0 if num_cpus else min(1.0, self.cpus / self.n)}
        remote = self.ray.remote(Worker).options(**options)
        env = dict(self.command.env, **env)
        return remote.remote(slot, self.n, self.argv, env, os.getcwd(), self.command.kind, self.command.files)

    def place(self) -> None:
        num_cpus = 1 if self.n <= self.cpus else 0
        for i in range(self.n):
            w = WorkerState(index=i, count=self.n, slot=i)
            w.handle = self._actor(i, i, num_cpus, {})
            self.workers.append(w)
        # Ray starts a node's actors a few at a time: wait while they come, then start every worker at once.
        placed = {w.handle.where.remote(): w for w in self.workers}
        waiting = list(placed)
        progress = time.monotonic()
        while waiting:
            ready, waiting = self.ray.wait(waiting, num_returns=len(waiting), timeout=1.0)
            for ref in ready:
                try:
                    placed[ref].info = self.ray.get(ref)
                except self.ray.exceptions.RayError as e:
                    raise cluster.ClusterError(f"could not place the workers: {_first_line(e)}") from None
                progress = time.monotonic()
            if waiting and time.monotonic() - progress > PLACE_TIMEOUT:
                raise cluster.ClusterError(
                    f"{len(waiting)} of {self.n} workers not placed after {PLACE_TIMEOUT:.0f} s without progress "
                    f"(the cluster has {self.cpus} CPUs)"
                )
        # A worker's Python starts in about a second; more workers than CPUs start slower (measured:
        # 32 on 2 CPUs took up to 10 s), so their engines start together after the slowest's likely start.
        start_at = time.time() + STARTUP_S + STARTUP_PER_EXTRA_S * max(0.0, self.n / self.cpus - 1)
        try:
            infos = self.ray.get([w.handle.start.remote(start_at) for w in self.workers], timeout=PLACE_TIMEOUT)
        except self.ray.exceptions.RayError as e:  # GetTimeoutError included
            raise cluster.ClusterError(f"could not start the workers: {_first_line(e)}") from None
        now = time.monotonic()
        for w, info in zip(self.workers, infos):
            w.info, w.state, w.last_answer = info, "running", now
            self.merge.join(w.index)
        nodes = sorted({w.info["node_id"] for w in self.workers})
        hosts = sorted({w.info["host"] for w in self.workers})
        shipped = sum(1 for w in self.workers if w.info.get("shipped"))
        sys.stderr.write(
            f"squall: {self.n} workers on {len(nodes)} Ray node{'s' if len(nodes) != 1 else ''} "
            f"({', '.join(hosts)}), {self.command.units} {self.command.what} in all"
            + (f"; the locustfile sent to {shipped} of them" if shipped else "")
            + "\n"
        )
        sys.stderr.flush()
        if self.command.started is not None:
            self.command.started()

    # -- following -----------------------------------------------------------------------------------

    def run(self) -> int:
        self.place()
        self.follower.begin(state="running")
        usage0 = resource.getrusage(resource.RUSAGE_SELF)
        following = time.monotonic()
        with deferred():  # after the run's stop, a second Ctrl-C waits for the merged outputs
            with self.life.signals():
                self.life.follow(self, self.follower, self.command.line)
            usage1 = resource.getrusage(resource.RUSAGE_SELF)
            driver_cpu = (usage1.ru_utime + usage1.ru_stime) - (usage0.ru_utime + usage0.ru_stime)
            self._collect()
            return self._report(driver_cpu, time.monotonic() - following)

    def step(self) -> bool:
        """One pass of the lifecycle: the polls due sent, the answers of a quarter of a second taken, the
        workers and the page's messages checked; True once no worker is active (its last seconds merged)."""
        if not any(w.active for w in self.workers):
            self.merge.finish()
            return True
        now = time.monotonic()
        if now >= self.next_poll:
            self.next_poll = now + POLL_EVERY
            for w in self.workers:
                if w.active and w.pending is None:
                    w.pending = w.handle.poll.remote()
                    self.polls += 1
        pending = {w.pending: w for w in self.workers if w.pending is not None}
        if pending:
            ready, _ = self.ray.wait(list(pending), num_returns=len(pending), timeout=TICK)
            for ref in ready:
                self._answer(pending[ref], ref)
        else:
            time.sleep(TICK)
        self._check(time.monotonic())
        return False

    def _answer(self, w: WorkerState, ref: Any) -> None:
        w.pending = None
        try:
            answer = self.ray.get(ref)
        except self.ray.exceptions.RayError as e:
            self._lose(w, f"its actor died: {_first_line(e)}")
            return
        now = time.monotonic()
        w.last_answer = now
        if w.state == "starting":  # a replacement: its first answer is where it runs
            w.info, w.state = answer, "running"
            self.merge.join(w.index)
            sys.stderr.write(f"squall: {w.label()} took over worker {w.replaces}'s share\n")
            return
        points = answer["points"]
        self.merge.add(w.index, points, answer["totals"])
        if answer["totals"]:
            w.totals = answer["totals"]
        if answer["progress"]:
            w.progress = answer["progress"]
        if points:
            w.points += len(points)
            w.last_unix = points[-1]["unix"] + 1.0
        w.feed_bytes = answer["feed_bytes"]
        w.poll_bytes += answer["bytes"]
        for line in answer["stderr"]:
            self._say(f"[worker {w.index}] {line}")
        runner = self.command.runner
        if runner is not None and answer.get("client_id"):
            w.client_id = answer["client_id"]
            runner.received(w.client_id, w.index, answer.get("reports") or [], answer.get("messages") or [])
        if answer["code"] is not None:
            self._exited(w, answer["code"])

    def _exited(self, w: WorkerState, code: int) -> None:
        w.code = code
        if code < 0 and -code not in self._sent_signals():
            self._lose(w, f"its process died of signal {-code}")
            return
        w.state = "exited"
        self.merge.leave(w.index)
        if code not in EXPECTED_CODES:
            self._say(f"squall: {w.label()} exited with code {code}")

    def _sent_signals(self) -> set[int]:
        return {signal.SIGINT, signal.SIGTERM, signal.SIGKILL} if self.stopping_since is not None else set()

    def _check(self, now: float) -> None:
        """Once a pass: silent workers, the locustfile runner's messages to the workers, a stop overdue."""
        for w in self.workers:
            if w.state == "running" and now - w.last_answer > SILENT_S:
                self._lose(w, f"no answer for {SILENT_S:.0f} s")
            elif w.state == "starting" and now - w.last_answer > PLACE_TIMEOUT:
                self._lose(w, f"not started within {PLACE_TIMEOUT:.0f} s (no node could take it)")
            w.observe_lag(time.time())
        runner = self.command.runner
        if runner is not None and runner.outbox:
            outbox, runner.outbox = runner.outbox, []
            for msg_type, data, client_id in outbox:
                for w in self.workers:
                    if w.state == "running" and (client_id is None or client_id == w.client_id):
                        w.handle.message.remote(msg_type, data)
        if self.stopping_since is not None and now - self.stopping_since > STOP_GRACE:
            for w in self.workers:
                if w.active:
                    self._lose(w, f"still running {STOP_GRACE:.0f} s after it was told to stop")

    def progress(self) -> ClusterProgress | None:
        """The workers' progress counters added up (the last each sent; phases: the least advanced)."""
        known = [w.progress for w in self.workers if w.progress]
        if not known:
            return None
        # (the counts the workers' feeds send: squall.distributed.feed's fields but the time and the phase)
        summed = {k: sum(p.get(k) or 0 for p in known) for k in known[0] if k not in ("elapsed", "phase")}
        phases = [str(p["phase"]) for p in known if p.get("phase") in MQTT_PHASES]
        return ClusterProgress(
            elapsed=max(p.get("elapsed") or 0.0 for p in known),
            phase=min(phases, key=MQTT_PHASES.index) if phases else "running",
            finished=not any(w.active for w in self.workers),
            **summed,
        )

    def fields(self) -> dict[str, Any]:
        return page_fields(self.progress(), self.command.kind) or {"users": 0}

    def _say(self, text: str) -> None:
        if self.command.line is not None:
            self.command.line.clear()
        sys.stderr.write(text + "\n")
        sys.stderr.flush()

    # -- the page's commands and the thresholds (runtime.follow.Controls) ------------------------------

    def stop(self, why: Why) -> None:
        """Stop on the page or a failed threshold: every worker told, as by Ctrl-C."""
        self.stop_all(signal.SIGINT)
        if why == "page" and self.command.dashboard is not None:
            self.command.dashboard.store.set(state="stopping")

    def reset(self) -> None:
        """Not offered: the page hides Reset for a distributed run (its totals merge the workers' own)."""

    def set_users(self, users: int, spawn_rate: float) -> None:
        """Not offered: a distributed bench or MQTT run's load is set by its command line."""

    # -- stopping and losing -------------------------------------------------------------------------

    def on_signal(self, signum: int, count: int) -> None:
        """Ctrl-C or SIGTERM: the workers told to stop; a second one kills them (no more waiting)."""
        if count == 1:
            self.stop_all(signum)
            return
        for w in self.workers:
            if w.active:
                self._kill(w)
                w.state, w.lost_reason = "lost", "killed by a second signal to the driver"
                self.merge.leave(w.index)

    def stop_all(self, signum: int) -> None:
        if self.stopping_since is None:
            self.stopping_since = time.monotonic()
        for w in self.workers:
            if w.active:
                w.handle.stop.remote(signum)

    def _kill(self, w: WorkerState) -> None:
        with contextlib.suppress(Exception):  # already gone
            self.ray.kill(w.handle, no_restart=True)

    def _lose(self, w: WorkerState, reason: str) -> None:
        if w.state in ("lost", "exited"):
            return
        w.state, w.lost_reason = "lost", reason
        self.merge.leave(w.index)
        self._kill(w)
        if self.command.runner is not None and w.client_id:
            self.command.runner.lost(w.client_id)
        start = self.merge.starts.get(w.index, w.info.get("started", time.time()))
        elapsed = time.time() - start
        sent, what = _reported(w.totals, self.command.kind)
        text = f"squall: {w.label()} lost after {elapsed:.1f} s ({reason}); it had reported {sent:,} {what}"
        if self.stopping_since is not None:
            self._say(text)
            return
        if self.on_loss == "stop":
            self._say(text + "; stopping the run (--on-worker-loss stop)")
            self.stopped_by_loss = True
            self.stop_all(signal.SIGINT)
            return
        env = None
        if self.on_loss == "replace" and self.command.remaining is not None:
            env = self.command.remaining((w.slot, w.count), elapsed, sent)
        if self.on_loss == "replace" and env:
            index = len(self.workers)
            new = WorkerState(index=index, count=w.count, slot=w.slot, replaces=w.index)
            new.handle = self._actor(index, w.slot, 0, env)
            new.pending = new.handle.start.remote()
            new.last_answer = time.monotonic()
            self.workers.append(new)
            self._say(text + f"; its share goes to a new worker {index} (--on-worker-loss replace)")
            return
        left = sum(1 for x in self.workers if x.active)
        why = ""
        if self.on_loss == "replace":
            why = " (nothing of its share was left)" if env == {} else " (its share cannot be re-placed)"
        self._say(text + f"; the run goes on with {left} worker{'s' if left != 1 else ''}{why}")

    def cleanup(self) -> None:
        """No actor outlives the driver's run (Ray would end them with the job too)."""
        for w in self.workers:
            self._kill(w)

    # -- the end -------------------------------------------------------------------------------------

    def _collect(self) -> None:
        refs = {w.handle.result.remote(): w for w in self.workers if w.state == "exited"}
        if not refs:
            return
        ready, _ = self.ray.wait(list(refs), num_returns=len(refs), timeout=RESULT_TIMEOUT)
        for ref, w in refs.items():
            try:
                w.final = self.ray.get(ref) if ref in ready else None
            except self.ray.exceptions.RayError as e:
                w.final = None
                w.lost_reason = f"its result never came: {_first_line(e)}"
            if w.final is None and w.lost_reason is None:
                w.lost_reason = f"its result did not come within {RESULT_TIMEOUT:.0f} s"

    def _report(self, driver_cpu: float, wall: float) -> int:
        finished = [w for w in self.workers if w.final and w.final.get("result")]
        lost = [w for w in self.workers if w.state == "lost"]
        docs = [w.final["result"] for w in finished if w.final]
        if not docs and self.life.received:
            sys.stderr.write("squall: stopped before any worker had a result\n")
            return exitcodes.stopped_by(self.life.received[0])
        if not docs:
            sys.stderr.write("squall: error: no worker produced a result\n")
            codes = [w.code for w in self.workers if w.code is not None and w.code > 0]
            return max(codes) if codes else exitcodes.CANNOT_START
        result = _engine.merge_results(docs)
        own = {w.index: json.loads(w.final["result"]) for w in finished if w.final}
        if self.command.name == "run":
            result["exceptions"] = _exceptions(list(own.values()))
        result["generator"] = _generators(own)
        if self.command.monitor is not None:
            self.command.monitor.stop_into(result)
        entries = [entry(w, self.shares[w.slot], own.get(w.index)) for w in self.workers]
        for e, w in zip(entries, self.workers):
            if w.final is not None:
                e["cpu_s"] = round(w.final["cpu_s"], 3)
        result["workers"] = entries
        polls = max(self.polls, 1)
        result["distributed"] = {
            "ray": self.args.ray,
            "workers": self.n,
            "nodes": len({w.info.get("node_id") for w in self.workers if w.info}),
            "on_worker_loss": self.on_loss,
            "lost": len(lost),
            # what lost workers had streamed: not in the merged totals (they sent no result document)
            "lost_requests": sum(int(((w.totals or {}).get("aggregate") or {}).get("requests", 0)) for w in lost),
            "driver": {
                # while following the workers (placing them and the final merge not included)
                "cpu_s": round(driver_cpu, 3),
                "wall_s": round(wall, 3),
                "polls": self.polls,
                "poll_bytes_mean": round(sum(w.poll_bytes for w in self.workers) / polls, 1),
                "cpu_us_per_poll": round(1e6 * driver_cpu / polls, 1),
                "late_parts": self.merge.late_parts,
            },
        }
        signum = self.life.signum
        code = self.command.finish(result, signum)
        self.command.tables.write("\n" + table(entries))
        self.command.tables.flush()
        for w in lost:
            sys.stderr.write(f"squall: {w.label()} was lost: {w.lost_reason}\n")
        if self.command.partial is not None:
            self.command.partial.done()
        if self.command.dashboard is not None:
            web_live.serve_the_end(self.command.dashboard, result, getattr(self.args, "autoquit", None), signum)
        if self.stopped_by_loss and signum is None:
            return exitcodes.CANNOT_START
        return code


@dataclass(frozen=True)
class ClusterProgress:
    """What the workers' progress lines would show, added up (squall.report.progress.Shown)."""

    elapsed: float
    phase: str
    finished: bool
    completed: int = 0
    failed: int = 0
    users: int = 0
    connected: int = 0
    sent: int = 0
    published: int = 0
    mqtt_failed: int = 0
    delivered: int = 0


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0][:200] if text else type(e).__name__


def _reported(totals: dict[str, Any] | None, kind: str) -> tuple[int, str]:
    """What a worker had reported, as its last live totals say: requests, or MQTT messages published."""
    totals = totals or {}
    if kind == "mqtt":
        published = [e["requests"] for e in totals.get("endpoints", []) if e.get("method") == "PUBLISH"]
        return sum(published), "messages published"
    return int((totals.get("aggregate") or {}).get("requests", 0)), "requests"


def _exceptions(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The scripts' exceptions of every worker, merged by (message, traceback) as --processes does."""
    merged: dict[tuple[str, str], dict[str, Any]] = {}
    for doc in docs:
        for x in doc.get("exceptions", []):
            e = merged.setdefault((x["message"], x["traceback"]), dict(x, count=0))
            e["count"] += x["count"]
    return list(merged.values())


def _generators(docs: dict[int, dict[str, Any]]) -> dict[str, Any]:
    """The workers' views of themselves as one `generator` section: each worker's process as a line of
    its table, their warnings (naming the worker), saturated if any was."""
    threads, warnings, cpus, saturated = [], [], 0, False
    for index, doc in sorted(docs.items()):
        g = doc.get("generator") or {}
        process = g.get("process") or {}
        cpus += int(process.get("cpus") or 0)
        threads.append(
            {
                "name": f"worker {index}",
                "cpu_percent_mean": process.get("cpu_percent_mean", 0.0),
                "cpu_percent_peak": process.get("cpu_percent_peak", 0.0),
                "saturated_s": 0,
            }
        )
        warnings += [f"worker {index}: {w}" for w in g.get("warnings", [])]
        saturated = saturated or bool(g.get("saturated"))
    # (null: a worker whose run was too short to sample its CPU; the total is of those measured)
    total = sum(t["cpu_percent_mean"] or 0.0 for t in threads)
    peak = sum(t["cpu_percent_peak"] or 0.0 for t in threads)
    return {
        "threads": threads,
        "process": {"cpu_percent_mean": round(total, 1), "cpu_percent_peak": round(peak, 1), "cpus": cpus},
        "warnings": warnings,
        "saturated": saturated,
    }

"""`squall bench` and `squall mqtt` runs, whose users the engine holds (`EngineRun`), under the run's
lifecycle (squall.runtime.lifecycle: Ctrl-C and SIGTERM, the progress line, the dashboard, the
partial files); and `--find-limit` by rate, each step such a run."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, Callable

from squall import _engine, exitcodes, limit, outputs
from squall.distributed.feed import WorkerFeed
from squall.errors import UsageError
from squall.monitor import GeneratorWatch
from squall.monitor import summary as monitor_summary
from squall.options.arguments import to_duration, to_rate
from squall.report.progress import page_fields
from squall.runtime.follow import Follower
from squall.runtime.lifecycle import Lifecycle
from squall.web import page
from squall.web.live import Publisher

if TYPE_CHECKING:
    import argparse

    from squall import thresholds
    from squall._engine import Progress, Run
    from squall.monitor import Monitor
    from squall.report.progress import ProgressLine
    from squall.runtime.follow import Why
    from squall.thresholds import Watch
    from squall.web.live import PartialFiles
    from squall.web.server import Dashboard, LiveStore


def drive(
    engine_run: Run,
    line: ProgressLine | None = None,
    dashboard: Dashboard | None = None,
    partial: PartialFiles | None = None,
    watch: Watch | None = None,
    monitor: Monitor | None = None,
    rss_start: int | None = None,
) -> tuple[dict[str, Any], int | None]:
    """Waits for the run to end, showing its progress on `line` and `dashboard`, saving it in `partial`
    and checking `watch`'s thresholds if given; returns (result dict, the signal that stopped it or
    None). A signal, Stop on the dashboard or a failed threshold (`--threshold-abort`) stops the run,
    and the result still holds everything measured until then. `rss_start`: squall's resident memory
    before the run started (`generator.resident`), what its connections are counted from.
    """
    store = dashboard.store if dashboard is not None else None
    # Always on: the generator watches itself (0.1 ms a second), reading the stream once a second.
    generator = GeneratorWatch(rss_start=rss_start)
    # A distributed worker's feed carries the histograms: its driver merges them exactly.
    histograms = isinstance(partial, WorkerFeed)
    publisher = Publisher(
        lambda cursor: engine_run.live(cursor, 0.0, histograms=histograms), store, partial, generator, monitor
    )
    run = EngineRun(engine_run, store)
    follower = Follower(run, publisher, dashboard, watch)
    life = Lifecycle(run)
    follower.begin(state="running")
    with life.signals():
        life.follow(run, follower, line)
    # The command hands the result to the dashboard once it has judged and written it (`store.finish`).
    result = engine_run.result()
    observe(result, generator, monitor)
    return result, life.signum


def observe(result: dict[str, Any], generator: GeneratorWatch, monitor: Monitor | None) -> None:
    """The generator's view of itself (its lateness judged on the whole run) and the target's
    resources, into the result."""
    generator.end(result.get("timeseries"))
    result["generator"] = generator.to_json()
    if monitor is not None:
        monitor.stop_into(result)


def print_observations(result: dict[str, Any], out: Any = None) -> None:
    """The target's resources (peak and mean) on `out` (stdout), and the generator's warnings on stderr."""
    if result.get("monitor"):
        out = out or sys.stdout
        out.write("\n" + monitor_summary(result["monitor"]))
        out.flush()
    for warning in (result.get("generator") or {}).get("warnings", []):
        sys.stderr.write(f"squall: warning: {warning}\n")


class EngineRun:
    """A bench or MQTT run, whose users the engine holds, as its lifecycle drives it (its pass waits on
    the engine's thread) and as the page's commands reach it: Stop and Reset; the page offers no user
    count for them."""

    def __init__(self, engine_run: Run, store: LiveStore | None) -> None:
        self.engine_run = engine_run
        self.store = store
        self.kind = store.kind if store is not None else ""  # the page's kind; none without a page

    def step(self) -> bool:
        return self.engine_run.wait(0.25)

    def progress(self) -> Progress:
        return self.engine_run.progress()

    def fields(self) -> dict[str, Any]:
        """What the page shows beside the engine's stream (nothing without a page)."""
        return page_fields(self.engine_run.progress(), self.kind) if self.kind else {}

    def stop(self, why: Why) -> None:
        self.engine_run.stop()
        if why == "page" and self.store is not None:
            self.store.set(state="stopping")

    def on_signal(self, signum: int, count: int) -> None:
        self.engine_run.stop()

    def reset(self) -> None:
        self.engine_run.reset_totals()

    def set_users(self, users: int, spawn_rate: float) -> None:
        pass


def refuse_load_flags(given: list[tuple[str, Any]]) -> None:
    """`--find-limit` sets the load itself: a load flag given with it ((flag, value) pairs) is a usage error."""
    for flag, value in given:
        if value:
            raise UsageError(f"--find-limit sets the load itself: drop {flag}")


def find_limit_by_rate(
    args: argparse.Namespace,
    command: str,
    target: str,
    start: Callable[[float | None, float, int | None], Run],
    judge: Callable[[dict[str, Any], float, list[thresholds.Threshold], int | None], limit.Step],
    unit: str,
    default_slos: list[str],
    describe: Callable[[list[str], float], str],
    after_step: Callable[[dict[str, Any]], None] | None = None,
    plan: limit.ConnectionPlan | None = None,
    **settings: Any,
) -> int:
    """`squall bench|mqtt --find-limit` after its command's own checks (`refuse_load_flags` first): the
    SLOs and the step time read, `describe(slo_texts, step_s)` said, the search (`find_rate_limit`;
    `start(rate, step_s, connections)` starts a step, `plan` choosing its connections), and its result
    written and said as any run's, to the exit code. A target that cannot be reached is CANNOT_START."""
    slo_texts, slos = limit.parse_slos(args, default_slos)
    hold = to_duration(args.step_time)
    most = to_rate(args.max_rate) if args.max_rate else None
    limit.say(describe(slo_texts, hold))
    try:
        outcome, result, stopped = find_rate_limit(
            lambda rate, connections: start(rate, hold, connections),
            lambda r, rate, connections: judge(r, rate, slos, connections),
            unit,
            slo_texts,
            most,
            after_step=after_step,
            plan=plan,
            step_s=hold,
            **settings,
        )
    except _engine.TargetError as e:
        sys.stderr.write(f"squall {command}: error: {e}\n")
        return exitcodes.CANNOT_START
    outputs.write_and_say(
        result or {},
        json_path=args.json,
        csv_prefix=args.csv,
        full_history=args.csv_full_history,
        html_path=args.html,
        html_meta=page.meta(command, getattr(args, "argv", None) or [], target),
    )
    return limit.exit_code(outcome, stopped)


def find_rate_limit(
    start: Callable[[float | None, int | None], Run],
    judge: Callable[[dict[str, Any], float, int | None], limit.Step],
    unit: str,
    slo_texts: list[str],
    most: float | None,
    after_step: Callable[[dict[str, Any]], None] | None = None,
    plan: limit.ConnectionPlan | None = None,
    **settings: Any,
) -> tuple[limit.Outcome, dict[str, Any] | None, list[int]]:
    """`--find-limit` by rate (bench, mqtt): a closed-model probe for the scale (`start(None, floor)`),
    then `limit.search` from half of it over open-model steps (`start(rate, connections)`, the
    connections from `plan` when there is one, else None), each driven to its end, `judge`d and
    reviewed by the plan; `after_step` runs after each step unless a signal stopped the search. Returns
    the outcome, the result to report and the signals received. TargetError propagates from the probe."""
    stopped: list[int] = []

    def step(rate: float | None, connections: int | None) -> dict[str, Any]:
        if stopped:
            raise KeyboardInterrupt
        try:
            engine_run = start(rate, connections)
        except _engine.UsageError as e:
            raise UsageError(str(e)) from None
        result, signum = drive(engine_run)
        if signum is not None:
            stopped.append(signum)
        elif after_step is not None:
            after_step(result)
        return result

    def measure(rate: float) -> limit.Step:
        connections = plan.for_rate(rate) if plan is not None else None
        s = judge(step(rate, connections), rate, connections)
        if plan is not None:
            plan.review(s)
        return s

    floor = plan.floor if plan is not None else None
    probe = judge(step(None, floor), 0.0, None)  # the closed model: no schedule, no connection check
    probe.connections = floor
    if plan is not None:
        plan.observe(probe)
    start_at = max(probe.achieved / 2, 1.0)
    outcome, result = limit.search(
        measure, unit, slo_texts, start=start_at, most=most, probe=probe, climbing=True,
        show_connections=plan is not None, **settings,
    )  # fmt: skip
    return outcome, result, stopped

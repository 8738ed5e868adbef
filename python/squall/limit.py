"""`--find-limit`: the highest load a target sustains within its SLO, found by measurement.

The search (`find`) is the same for every command; what a step is (a bench run at a rate, a locustfile
at a user count, MQTT clients at a rate) is the caller's `measure(load) -> Step`.

1. A probe gives the scale: `squall bench` runs the closed model for one step with the connections
   given and takes its throughput X (what the target does flat out); the search starts at X / 2.
2. Growth: the load doubles while steps pass, up to `--max-rate`.
3. Bisection between the highest passing and the lowest failing load, until they are within
   `precision` (5%) of each other or the step budget is spent.

A step passes when its SLOs hold (default p95 < 1 s and error_rate < 1%; `--slo`, the threshold
language), the target keeps up (achieved throughput at least 97% of the offered load: above capacity
the excess queues, so achieved stays at capacity while offered grows), and latency is not climbing
within the step (its last second's median more than twice its first's and 5 ms more: a queue building
up, which a short step can hide in its percentiles). A step in which the generator, not the target,
fell behind stops the search: no limit is reported that squall itself caused. It fell behind when its
own watch (`squall.monitor.GeneratorWatch`) saw an engine thread or the process saturated, or when sends
went out late although even the p99 latency kept at most half the connections busy.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

from squall import exitcodes, thresholds
from squall.errors import UsageError

DEFAULT_SLOS = ["p95<1s", "error_rate<1%"]
KEEP_UP = 0.97  # achieved / offered below this: the target did not keep up
PRECISION = 0.05  # bisection ends when the failing load is within 5% above the passing one
LATE_GENERATOR = 0.05  # late sends (> 10 ms) above this share, with idle connections: the generator lagged


@dataclass
class Step:
    load: float  # offered: requests or messages a second, or users
    achieved: float  # completed a second, in the steady part of the step (`steady_rate`)
    p50_us: float
    p95_us: float
    p99_us: float
    error_rate: float
    requests: int = 0  # completed in the step
    abandoned: int = 0  # sent but still in flight when the step ended (a queue at the target)
    passed: bool = False
    reason: str = ""  # why it failed, or "" when it passed
    generator_bound: bool = False
    verdicts: list[dict[str, Any]] = field(default_factory=list)
    result: dict[str, Any] | None = None  # the step's own result document (not in the JSON's steps)

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("result")
        return d


def steady_rate(result: dict[str, Any], focus: str | None = None) -> float:
    """Completed a second once the step is under way: the median of its whole seconds but the first (users
    starting, connections opening) and the last (partial); the whole run's mean when it is too short.
    `focus`: count only the endpoints of that method (MQTT's PUBLISH)."""

    def count(p: dict[str, Any]) -> float:
        if focus is None:
            return float(p.get("requests", 0))
        return float(sum(e["requests"] for e in p.get("endpoints", []) if e["method"] == focus))

    series = result.get("timeseries") or []
    inner = [count(p) for p in series[1 : int(result["duration_s"])]]
    if len(inner) >= 2:
        return statistics.median(inner)
    whole = _focused(result, focus)
    return float(whole["requests"]) / (result["duration_s"] or 1e-9)


def _focused(result: dict[str, Any], focus: str | None) -> dict[str, Any]:
    """The aggregate, or the endpoint of method `focus` (MQTT: PUBLISH) when there is one."""
    if focus is not None:
        for e in result.get("endpoints", []):
            if e["method"] == focus:
                return dict(e)
    return dict(result["aggregate"])


def _median_of_second(point: dict[str, Any]) -> float:
    return float((point.get("percentiles_us") or {}).get("50", 0))


def judge(
    result: dict[str, Any],
    offered: float,
    slos: list[thresholds.Threshold],
    connections: int | None = None,
    focus: str | None = None,
) -> Step:
    """A step's verdict from its result document (`offered`: the load it was asked to carry; `focus`:
    the endpoints of that method carry it, as MQTT's PUBLISH, else all of them)."""
    agg = _focused(result, focus)
    pct = agg.get("percentiles_us") or {}
    step = Step(
        load=offered,
        achieved=steady_rate(result, focus),
        p50_us=float(pct.get("50", 0)),
        p95_us=float(pct.get("95", 0)),
        p99_us=float(pct.get("99", 0)),
        error_rate=agg["failures"] / agg["requests"] if agg["requests"] else 0.0,
        requests=agg["requests"],
        abandoned=result.get("abandoned", 0),
        result=result,
    )
    verdicts = [thresholds.evaluate(t, result) for t in slos]
    step.verdicts = [v.to_json() for v in verdicts]
    failed = [v for v in verdicts if not v.passed]
    schedule = result.get("schedule") or {}
    sent = schedule.get("sent") or 0
    late_share = (schedule.get("late", 0) / sent) if sent else 0.0
    # Little's law: connections busy = throughput x latency. Sends go out late when no connection is
    # free, which a slow target causes; only if even its p99 latency could not have kept half the
    # connections busy was the generator itself behind.
    busy = step.achieved * step.p99_us / 1e6
    if late_share > LATE_GENERATOR and connections and busy < 0.5 * connections and not failed:
        step.generator_bound = True
        step.reason = (
            f"the generator fell behind: {late_share:.0%} of sends late with at most {busy:.0f} of {connections} "
            "connections busy (squall's limit, not the target's: use --threads, --processes or a bigger machine)"
        )
        return step
    generator = result.get("generator") or {}
    if generator.get("saturated") and not failed:  # squall.monitor.GeneratorWatch: short of CPU
        step.generator_bound = True
        warnings = generator.get("warnings") or ["an engine thread was saturated"]
        step.reason = f"the generator saturated ({warnings[0]})"
        return step
    series = [p for p in result.get("timeseries", []) if p.get("requests")]
    if failed:
        v = failed[0]
        step.reason = f"{v.threshold.text} failed (measured {v.threshold.shown(v.value)})"
    elif step.achieved < KEEP_UP * offered:
        step.reason = f"the target did not keep up: {step.achieved:,.0f}/s of {offered:,.0f}/s offered"
    elif len(series) >= 3:
        first, last = _median_of_second(series[0]), _median_of_second(series[-1])
        if last > 2 * first and last - first > 5000:
            step.reason = f"latency climbing within the step: median {first / 1000:.1f} ms to {last / 1000:.1f} ms"
    step.passed = not step.reason
    return step


@dataclass
class Outcome:
    limit: float | None  # the highest passing load; None when none passed or the generator was the limit
    failed_at: float | None  # the lowest failing load
    reason: str
    steps: list[Step]


def find(
    measure: Callable[[float], Step],
    start: float,
    most: float | None = None,
    precision: float = PRECISION,
    budget: int = 14,
    on_step: Callable[[Step], None] | None = None,
    whole: bool = False,
) -> Outcome:
    """Grows from `start` (doubling) to the first failure, then bisects; `whole` rounds loads to
    integers (users). Stops at `budget` steps."""
    steps: list[Step] = []
    good: float | None = None
    bad: Step | None = None

    def run(load: float) -> Step:
        s = measure(load)
        steps.append(s)
        if on_step:
            on_step(s)
        return s

    def rounded(x: float) -> float:
        return float(max(1, round(x))) if whole else x

    load = rounded(start)
    while len(steps) < budget:  # grow
        s = run(load)
        if s.generator_bound:
            return Outcome(None, None, s.reason, steps)
        if not s.passed:
            bad = s
            break
        good = load
        if most is not None and load >= most:
            return Outcome(good, None, f"every load up to --max-rate {most:g} passed", steps)
        load = rounded(min(load * 2, most) if most is not None else load * 2)
    while good is None and bad is not None and len(steps) < budget and bad.load > (1 if whole else 1e-3):
        load = rounded(bad.load / 4)  # failing from the start: come down fast
        if load >= bad.load:
            break
        s = run(load)
        if s.generator_bound:
            return Outcome(None, None, s.reason, steps)
        if s.passed:
            good = load
        else:
            bad = s
    while good is not None and bad is not None and len(steps) < budget:  # bisect
        if bad.load - good <= precision * good or (whole and bad.load - good <= 1):
            break
        load = rounded((good + bad.load) / 2)
        if load in (good, bad.load):
            break
        s = run(load)
        if s.generator_bound:
            return Outcome(good, bad.load, s.reason, steps)
        if s.passed:
            good = load
        else:
            bad = s
    if good is None:
        reason = bad.reason if bad else "no step ran"
        return Outcome(None, bad.load if bad else None, f"even the lowest load failed: {reason}", steps)
    if bad is None:
        return Outcome(good, None, "the step budget ran out before a load failed", steps)
    return Outcome(good, bad.load, f"at {bad.load:,.0f}: {bad.reason}", steps)


def table_header(unit: str) -> str:
    columns = f"{'offered':>11} {'achieved/s':>11} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} {'errors':>7}"
    return f"{'step':>5} {columns}  verdict"


def table_row(i: int | str, s: Step, unit: str) -> str:
    offered = f"{s.load:,.0f}{'' if unit == 'users' else '/s'}" if s.load else "closed"
    verdict = "pass" if s.passed else ("GENERATOR" if s.generator_bound else "fail") + f": {s.reason}"
    if not s.load:  # the probe: the scale, not a verdict
        verdict = "the scale: what the target does flat out"
    return (
        f"{i!s:>5} {offered:>11} {s.achieved:>11,.0f} {s.p50_us / 1000:>8.2f} {s.p95_us / 1000:>8.2f} "
        f"{s.p99_us / 1000:>8.2f} {s.error_rate * 100:>6.2f}%  {verdict}"
    )


def report(outcome: Outcome, unit: str, slos: list[str], **settings: Any) -> dict[str, Any]:
    """The `limit` object of the JSON; `settings`: how the search ran (step_s, connections, ...)."""
    return {
        "load": outcome.limit,
        "unit": unit,
        "failed_at": outcome.failed_at,
        "reason": outcome.reason,
        "slo": slos,
        "settings": {"keep_up": KEEP_UP, "precision": PRECISION, **settings},
        "steps": [s.to_json() for s in outcome.steps],
    }


def say(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def add_arguments(p: argparse.ArgumentParser, what: str, most: str, slos: list[str]) -> None:
    """--find-limit, --slo, --step-time and `most` (--max-rate or --max-users): the same for every command;
    `what` says what is searched ("the highest rate the target sustains")."""
    g = p.add_argument_group("the breaking point")
    g.add_argument("--find-limit", action="store_true", help=f"find {what} within --slo, in steps")
    g.add_argument(
        "--slo",
        action="append",
        metavar="EXPR",
        help=f"with --find-limit: what a step must hold, in the --threshold language, repeatable "
        f"(default {', '.join(slos).replace('%', '%%')})",
    )
    g.add_argument("--step-time", default="5s", help="with --find-limit: how long each step lasts (default 5s)")
    g.add_argument(most, help="with --find-limit: the most to try")


def parse_slos(args: argparse.Namespace, default: list[str]) -> tuple[list[str], list[thresholds.Threshold]]:
    """The --slo texts (or `default`) and their thresholds; UsageError for a malformed one."""
    texts = args.slo or default
    try:
        return texts, thresholds.parse_all(texts)
    except ValueError as e:
        raise UsageError(str(e)) from None


def search(
    measure: Callable[[float], Step],
    unit: str,
    slo_texts: list[str],
    start: float,
    most: float | None,
    probe: Step | None = None,
    whole: bool = False,
    **settings: Any,
) -> tuple[Outcome, dict[str, Any] | None]:
    """Runs `find` with its per-step table on stdout (after the `probe` row, if any) and the verdict
    line; returns the outcome and the result document to report: the highest passing step's (else the
    last step's), with its `limit`. Ctrl-C ends the search with what it has."""
    say(table_header(unit))
    if probe is not None:
        say(table_row("probe", probe, unit))
    rows = iter(range(1, 1000))
    steps: list[Step] = []

    def measured(load: float) -> Step:
        s = measure(load)
        steps.append(s)
        return s

    try:
        outcome = find(measured, start, most, whole=whole, on_step=lambda s: say(table_row(next(rows), s, unit)))
    except KeyboardInterrupt:
        outcome = Outcome(None, None, "interrupted", steps)
    if outcome.limit is not None:
        say(f"\nLimit: {outcome.limit:,.0f} {unit} within {', '.join(slo_texts)} ({outcome.reason})")
    else:
        say(f"\nNo limit established: {outcome.reason}")
    best = max((s for s in outcome.steps if s.passed), key=lambda s: s.load, default=None)
    shown = best or (outcome.steps[-1] if outcome.steps else probe)
    if shown is None or shown.result is None:
        return outcome, None
    result = shown.result
    result["limit"] = report(outcome, unit, slo_texts, start=start, **settings)
    if probe is not None:
        result["limit"]["probe"] = probe.to_json()
    return outcome, result


def exit_code(outcome: Outcome, stopped: list[int]) -> int:
    """0 with a limit found; 1 without; 130 or 143 when a signal ended the search."""
    if stopped:
        return exitcodes.stopped_by(stopped[0])
    return exitcodes.OK if outcome.limit is not None else exitcodes.ALL_FAILED

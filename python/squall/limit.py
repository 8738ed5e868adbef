"""`--find-limit`: the highest load a target sustains within its SLO, found by measurement.

The search (`find`) is the same for every command; what a step is (a bench run at a rate, a locustfile
at a user count, MQTT clients at a rate) is the caller's `measure(load) -> Step`.

1. A probe gives the scale: `squall bench` runs the closed model for one step with the connections
   given and takes its throughput X (what the target does with them); the search starts at X / 2.
2. Growth: the load doubles while steps pass, up to `--max-rate`.
3. Bisection between the highest passing and the lowest failing load, until they are within
   `precision` (5%) of each other or the step budget is spent.

A step passes when its SLOs hold (default p95 < 1 s and error_rate < 1%; `--slo`, the threshold
language), the target keeps up (achieved throughput at least 97% of the offered load, beyond the
step's own counting noise: above capacity the excess queues, so achieved stays at capacity while
offered grows), and, for a rate, latency is not climbing within the step (`trend`: a queue building up,
which a short step can hide in its percentiles). Each step records why it passed or failed (`checks`).

squall never reports its own limit as the target's:
- The generator fell behind when its own watch (`squall.monitor.GeneratorWatch`) saw an engine thread or
  the process saturated, or when sends went out late while, by Little's law (busy connections =
  throughput x mean response time), at most half the connections were busy. The search stops there.
- Connections: in the open model a request waits for a free connection, so too few would cap the
  target's throughput at connections / response time (50 connections at 20 ms: 2,500 a second,
  whatever the target could do). `ConnectionPlan` gives each rate step the connections Little's law
  asks for, with headroom, up to the open-file limit; a step whose sends went late with every
  connection busy while the target answered as fast as when it was idle was limited by squall: it is
  run again with more connections, or, at the open-file limit, ends the search with that verdict.
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

from squall import exitcodes, thresholds
from squall.errors import UsageError

DEFAULT_SLOS = ["p95<1s", "error_rate<1%"]
KEEP_UP = 0.97  # achieved / offered below this: the target did not keep up
PRECISION = 0.05  # bisection ends when the failing load is within 5% above the passing one
LATE_GENERATOR = 0.05  # late sends (> 10 ms) above this share: something held the sends back
# Little's law gives the mean number of requests in flight (rate x mean response time); a step gets
# HEADROOM times that, for the response time's spread and its growth near capacity. Connections open
# only as requests need them, so the headroom costs nothing until the target slows down.
HEADROOM = 4.0
# With every connection busy, the target is the limit if it was queueing: its mean response time (from
# the actual send) over QUEUEING times the fastest of the search; else squall's connections were.
QUEUEING = 2.0
ALL_BUSY = 0.8  # this share of a step's connections busy on the mean (Little's law): every one, at times
RETRIES = 6  # reruns of steps with more connections, in a whole search
# A trend is significant when its least-squares slope's t statistic passes the one-sided 99% point of
# Student's t with n - 2 degrees of freedom (n: the step's whole inner seconds) ...
T99 = {1: 31.82, 2: 6.965, 3: 4.541, 4: 3.747, 5: 3.365, 6: 3.143, 7: 2.998, 8: 2.896, 9: 2.821, 10: 2.764}
T99_MANY = 2.681  # df 12; for more degrees of freedom the test is slightly stricter than it needs to be
# ... and material: its rise over the step beyond 3 standard deviations of the per-second medians of the
# steps that passed before it (their noise), and beyond TREND_FLOOR_US.
TREND_FLOOR_US = 5000.0
Z99 = 2.326  # one-sided 99% of the normal: a throughput shortfall beyond the counting noise


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
    generator_bound: bool = False  # squall's limit, not the target's: the search stops
    connection_bound: bool = False  # every connection busy while sends went late (see ConnectionPlan)
    retry: bool = False  # squall's connections limited this step: run it again with more
    connections: int | None = None  # the connections the step could open (open model)
    service_us: float = 0.0  # mean response time from the actual send (the open model's lag taken out)
    achieved_se: float = 0.0  # the standard error of `achieved` (`arrival_noise`; users: the probe's too)
    medians_us: list[float] = field(default_factory=list)  # each inner whole second's median latency
    checks: list[dict[str, Any]] = field(default_factory=list)  # {check, passed, detail}: why
    verdicts: list[dict[str, Any]] = field(default_factory=list)
    result: dict[str, Any] | None = None  # the step's own result document (not in the JSON's steps)

    @property
    def busy(self) -> float:
        """Connections busy on the mean, by Little's law: throughput x mean response from the actual send."""
        return self.achieved * self.service_us / 1e6

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("result")
        return d

    def check(self, name: str, passed: bool, detail: str) -> None:
        """Notes one check; the first that fails is the step's reason."""
        self.checks.append({"check": name, "passed": passed, "detail": detail})
        if not passed and not self.reason:
            self.reason = detail

    def summary(self) -> str:
        """Why it passed or failed, for the table."""
        if self.passed:
            return "pass: " + ", ".join(c["detail"] for c in self.checks if c["passed"] and c["check"] != "connections")
        if self.retry:
            return f"squall's connections: {self.reason}"
        return ("GENERATOR" if self.generator_bound else "fail") + f": {self.reason}"


def _inner(result: dict[str, Any]) -> list[dict[str, Any]]:
    """The step's whole seconds once under way: all but the first (users starting, connections opening)
    and the last (partial)."""
    series = result.get("timeseries") or []
    return list(series[1 : int(result["duration_s"])])


def steady_rate(result: dict[str, Any], focus: str | None = None) -> float:
    """Completed a second once the step is under way: the mean of the inner seconds (`_inner`); the
    whole run's mean when it is too short. `focus`: the endpoints of that method (MQTT's PUBLISH)."""

    def count(p: dict[str, Any]) -> float:
        if focus is None:
            return float(p.get("requests", 0))
        return float(sum(e["requests"] for e in p.get("endpoints", []) if e["method"] == focus))

    inner = [count(p) for p in _inner(result)]
    if inner:
        import statistics  # (here and below: start-up, 9 ms with fractions and decimal; `-f` parses
        # this module's flags in every run, and searches in few)

        return statistics.fmean(inner)
    return float(_focused(result, focus)["requests"]) / (result["duration_s"] or 1e-9)


def observed_noise(result: dict[str, Any]) -> float:
    """The standard error of a step's achieved rate from the spread of its inner seconds' counts (users,
    whose own randomness sets it); the Poisson error of its whole count when it has under 2 of them."""
    inner = [float(p.get("requests", 0)) for p in _inner(result)]
    if len(inner) >= 2:
        import statistics

        # At least one request more or less over the seconds counted: whole seconds cut a user's cycle
        # where they fall, so a user a request every 1.05 s counts 1, 1, 1 (a rate of 1.00, no spread)
        # where its rate is 0.95. Taken as exact, such a probe outweighed every step, whose 15 users
        # then had to make 15 requests a second: a limit of 14 users against a server serving 38.
        return max(statistics.stdev(inner) / math.sqrt(len(inner)), 1 / len(inner))
    seconds = max(float(result["duration_s"]), 1e-9)
    return math.sqrt(float(result["aggregate"]["requests"])) / seconds


def arrival_noise(result: dict[str, Any], offered: float) -> float:
    """The standard error of a step's achieved rate that its arrivals alone cause: none for evenly spaced
    sends (a target keeping up completes what was sent), sqrt(rate / seconds) for Poisson arrivals (the
    count of n seconds at rate R has variance R n)."""
    schedule = result.get("schedule") or {}
    if schedule.get("arrival") != "poisson" or offered <= 0:
        return 0.0
    seconds = len(_inner(result)) or max(result["duration_s"], 1e-9)
    return math.sqrt(offered / seconds)


def _focused(result: dict[str, Any], focus: str | None) -> dict[str, Any]:
    """The aggregate, or the endpoint of method `focus` (MQTT: PUBLISH) when there is one."""
    if focus is not None:
        for e in result.get("endpoints", []):
            if e["method"] == focus:
                return dict(e)
    return dict(result["aggregate"])


def _median(point: dict[str, Any], focus: str | None) -> float | None:
    if focus is not None:
        point = next((e for e in point.get("endpoints", []) if e["method"] == focus), {})
    if not point.get("requests"):
        return None
    return float((point.get("percentiles_us") or {}).get("50", 0))


def judge(
    result: dict[str, Any],
    offered: float,
    slos: list[thresholds.Threshold],
    connections: int | None = None,
    focus: str | None = None,
    fastest_us: float | None = None,
) -> Step:
    """A step's verdict from its result document, each check noted (`offered`: the load it was asked to
    carry, 0 for none; `connections`: the most it could open; `focus`: the endpoints of that method
    carry it, as MQTT's PUBLISH, else all of them; `fastest_us`: the target's fastest mean response in
    the search so far, which tells a queueing target from a generator behind). The trend within the
    step is the search's to judge (`trend`): its noise is the earlier steps'."""
    agg = _focused(result, focus)
    pct = agg.get("percentiles_us") or {}
    achieved, se = steady_rate(result, focus), arrival_noise(result, offered)
    schedule = result.get("schedule") or {}
    step = Step(
        load=offered,
        achieved=achieved,
        achieved_se=se,
        p50_us=float(pct.get("50", 0)),
        p95_us=float(pct.get("95", 0)),
        p99_us=float(pct.get("99", 0)),
        error_rate=agg["failures"] / agg["requests"] if agg["requests"] else 0.0,
        requests=agg["requests"],
        abandoned=result.get("abandoned", 0),
        connections=connections,
        service_us=max(0.0, float(agg.get("mean_us") or 0.0) - float(schedule.get("mean_lag_us") or 0.0)),
        medians_us=[m for m in (_median(p, focus) for p in _inner(result)) if m is not None],
        result=result,
    )
    verdicts = [thresholds.evaluate(t, result) for t in slos]
    step.verdicts = [v.to_json() for v in verdicts]
    failed = [v for v in verdicts if not v.passed]
    sent = schedule.get("sent") or 0
    late = schedule.get("late", 0)
    late_share = late / sent if sent else 0.0
    generator = result.get("generator") or {}
    if generator.get("saturated") and not failed:  # squall.monitor.GeneratorWatch: short of CPU
        step.generator_bound = True
        warnings = generator.get("warnings") or ["an engine thread was saturated"]
        step.check("generator", False, f"the generator saturated ({warnings[0]})")
        return step
    if late_share > LATE_GENERATOR and connections:
        # Little's law: connections busy = throughput x mean response time (from the actual send). At the
        # target's slow moments more are: its p99 (the lag taken out) held as many as `peak`. Sends wait
        # when every connection is busy, which a burst of slow answers makes so with few busy on the
        # mean: uvicorn at 904 req/s, 40.8 ms mean and 198 ms p99, had 37 of 100 busy on the mean and
        # 12% of sends late while squall's threads used 5% of a core (CI, 2026-11-26); not squall's limit.
        busy = step.busy
        peak = step.achieved * max(step.service_us, step.p99_us - float(schedule.get("mean_lag_us") or 0.0)) / 1e6
        queueing = fastest_us is not None and step.service_us > QUEUEING * fastest_us
        if queueing:  # sends wait for connections the target is slow to accept or answer: its limit
            step.check(
                "late",
                True,
                f"{late_share:.0%} of sends late while the target was queueing (mean response "
                f"{step.service_us / 1000:.1f} ms, {step.service_us / (fastest_us or 1):.1f}x its fastest)",
            )
        elif busy < 0.5 * connections and peak < connections and not failed:
            step.generator_bound = True
            step.check(
                "generator",
                False,
                f"the generator fell behind: {late_share:.0%} of sends late with about {busy:.0f} of "
                f"{connections} connections busy (squall's limit, not the target's: use --threads, --processes "
                "or a bigger machine)",
            )
            return step
        else:  # whose limit: ConnectionPlan.review decides
            step.connection_bound = busy >= ALL_BUSY * connections or peak >= connections
    elif connections:
        step.check("connections", True, f"sends on time with up to {connections:,} connections")
    for v in verdicts:
        shown = v.threshold.shown(v.value)
        step.check("slo", v.passed, f"{v.threshold.text} ({shown})" if v.passed else f"{v.threshold.text} failed "
                   f"(measured {shown})")  # fmt: skip
    if offered > 0:
        short = KEEP_UP * offered - Z99 * step.achieved_se
        kept = step.achieved / offered
        if step.achieved >= short:
            step.check("keep_up", True, f"kept up {kept:.1%}")
        else:
            step.check(
                "keep_up",
                False,
                f"the target did not keep up: {step.achieved:,.0f}/s of {offered:,.0f}/s offered ({kept:.1%})",
            )
    step.passed = not step.reason
    return step


def trend(step: Step, before: list[Step]) -> tuple[bool, str]:
    """Whether latency climbed within `step` (a queue building up at the target), judged by its inner
    seconds' medians: (climbing, why). Climbing takes a least-squares slope that is significant (its t
    statistic beyond Student's one-sided 99% point: by chance in 1 step of 100) and material (a rise
    over the step beyond 3 standard deviations of the per-second medians in the passing steps `before`,
    their noise, and beyond 5 ms). A step with under 3 inner seconds cannot show one."""
    y = step.medians_us
    n = len(y)
    if n < 3:
        return False, "too short for a trend"
    import statistics

    xm, ym = (n - 1) / 2, statistics.fmean(y)
    sxx = sum((i - xm) ** 2 for i in range(n))
    slope = sum((i - xm) * (v - ym) for i, v in enumerate(y)) / sxx
    residual = sum((v - (ym + slope * (i - xm))) ** 2 for i, v in enumerate(y))
    se = math.sqrt(residual / (n - 2) / sxx)
    t = slope / se if se > 0 else (math.inf if slope > 0 else 0.0)
    rise = slope * (n - 1)
    deviations = [v - statistics.fmean(s.medians_us) for s in before if len(s.medians_us) >= 2 for v in s.medians_us]
    groups = sum(1 for s in before if len(s.medians_us) >= 2)
    noise = math.sqrt(sum(d * d for d in deviations) / (len(deviations) - groups)) if deviations else 0.0
    floor = max(TREND_FLOOR_US, 3 * noise)
    shown = f"median {y[0] / 1000:.1f} ms to {y[-1] / 1000:.1f} ms, {slope / 1000:+.1f} ms/s (t = {t:.1f})"
    if t > T99.get(n - 2, T99_MANY) and rise > floor:
        return True, f"latency climbing within the step: {shown}, beyond the noise of ±{noise / 1000:.1f} ms"
    return False, f"latency flat: {shown}"


class ConnectionPlan:
    """The connections of each open-model step (module doc): HEADROOM x rate x the slowest mean response
    time seen so far (the probe's at first), at least `floor` (-c) and at most `budget` (the open-file
    limit's). `fastest` goes to `judge`; `review` reruns a step squall's connections limited."""

    def __init__(self, floor: int, budget: int) -> None:
        self.floor = floor
        self.budget = max(floor, budget)
        self.slowest_us = 0.0
        self.fastest_us = math.inf
        self.retries = 0

    def for_rate(self, rate: float) -> int:
        need = math.ceil(HEADROOM * rate * self.slowest_us / 1e6)
        return max(self.floor, min(self.budget, need))

    def observe(self, step: Step) -> None:
        """The response time of a step that passed, or of the probe: what the next rates plan with (a
        failing step's is the target's queue, which more connections would only lengthen)."""
        if step.requests and step.service_us > 0 and (step.passed or not step.load):
            self.slowest_us = max(self.slowest_us, step.service_us)
            self.fastest_us = min(self.fastest_us, step.service_us)

    @property
    def fastest(self) -> float | None:
        """The target's fastest mean response so far (µs), for `judge`'s `fastest_us`."""
        return self.fastest_us if math.isfinite(self.fastest_us) else None

    def review(self, step: Step) -> None:
        """A step with every connection busy while its sends went late, the target not queueing (`judge`
        found it answering within QUEUEING x its fastest): squall's limit. It runs again with more
        connections, or the search stops at the open-file limit."""
        if not step.connection_bound:
            self.observe(step)
            return
        cap = step.connections or self.floor
        schedule = (step.result or {}).get("schedule") or {}
        late, sent = int(schedule.get("late", 0)), int(schedule.get("sent", 0))
        busy = (
            f"{late:,} of {sent:,} sends late with all {cap:,} connections busy "
            f"(Little's law: {step.achieved:,.0f}/s x {step.service_us / 1000:.1f} ms)"
            if step.busy >= ALL_BUSY * cap
            else f"{late:,} of {sent:,} sends late with all {cap:,} connections busy at the target's slow "
            f"moments (Little's law at its p99: {step.achieved:,.0f}/s x {step.p99_us / 1000:.1f} ms)"
        )
        if cap >= self.budget or self.retries >= RETRIES:
            step.generator_bound = True
            step.passed = False
            why = "the open-file limit" if cap >= self.budget else f"after {RETRIES} reruns"
            step.reason = ""
            step.check(
                "connections",
                False,
                f"generator-limited: connections: {busy} ({why}), the target answering as fast as at lower loads",
            )
            return
        self.retries += 1
        self.slowest_us = max(self.slowest_us, step.service_us)  # the target's own time, not a queue's
        self.floor = max(self.floor, min(self.budget, 2 * cap))  # and at least twice what fell short
        step.retry = True
        step.passed = False
        step.reason = ""
        step.check("connections", False, f"{busy}, the target answering as fast as at lower loads: again with "
                   f"{self.for_rate(step.load):,}")  # fmt: skip


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
    climbing: bool = False,
) -> Outcome:
    """Grows from `start` (doubling) to the first failure, then bisects; `whole` rounds loads to
    integers (users); `climbing` fails a step whose latency climbed (`trend`: rates, where a queue can
    grow without bound; users are a closed system, whose queue the users bound). A step `measure` marks
    `retry` runs again. Stops at `budget` steps (reruns not counted)."""
    steps: list[Step] = []
    good: float | None = None
    bad: Step | None = None

    def run(load: float) -> Step:
        while True:
            s = measure(load)
            if climbing and s.passed:
                up, why = trend(s, [p for p in steps if p.passed])
                s.check("trend", not up, why)
                s.passed = not up
            if s.passed:
                few = too_few_to_tell(s, steps)
                if few:
                    s.check("evidence", False, few)
                    s.passed = False
            steps.append(s)
            if on_step:
                on_step(s)
            if not s.retry:
                return s

    def rounded(x: float) -> float:
        return float(max(1, round(x))) if whole else x

    def measured() -> int:
        return sum(not s.retry for s in steps)

    def squalls(s: Step) -> str:
        """A search that met squall's own limit: what passed before it, then why."""
        passed = f"passed up to {good:,.0f}; " if good is not None else ""
        return f"{passed}at {s.load:,.0f}: {s.reason}"

    # The cap holds from the first step: the probe's throughput may be far above it (a first step of
    # 27,967 req/s under --max-rate 100, reported as the limit).
    load = rounded(min(start, most) if most is not None else start)
    cap = "--max-users" if whole else "--max-rate"
    while measured() < budget:  # grow
        s = run(load)
        if s.generator_bound:
            return Outcome(None, None, squalls(s), steps)
        if not s.passed:
            bad = s
            break
        good = load
        if most is not None and load >= most:
            return Outcome(good, None, f"every load up to {cap} {most:g} passed", steps)
        load = rounded(min(load * 2, most) if most is not None else load * 2)
    while good is None and bad is not None and measured() < budget and bad.load > (1 if whole else 1e-3):
        load = rounded(bad.load / 4)  # failing from the start: come down fast
        if load >= bad.load:
            break
        s = run(load)
        if s.generator_bound:
            return Outcome(None, None, squalls(s), steps)
        if s.passed:
            good = load
        else:
            bad = s
            if any(c["check"] == "evidence" and not c["passed"] for c in s.checks):
                break  # lower loads have fewer requests still: none can tell either
    while good is not None and bad is not None and measured() < budget:  # bisect
        if bad.load - good <= precision * good or (whole and bad.load - good <= 1):
            break
        load = rounded((good + bad.load) / 2)
        if load in (good, bad.load):
            break
        s = run(load)
        if s.generator_bound:  # the limit is in [good, bad): good is within the search's precision of it
            return Outcome(good, bad.load, squalls(s), steps)
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


# A step passes an error-rate SLO "below X" on evidence only when, had the rate been X, it would have
# seen failures: with n requests none shows with probability (1 - X)^n, about e^(-nX), under 5% from
# nX = 3 on (the "rule of three"). A search that came down after higher loads failed the SLO would
# otherwise pass a step of ten requests that saw no failure by chance, and report it the limit (a server
# failing 5% of requests at every load: "Limit: 2 req/s").
EVIDENCE = 3.0


def too_few_to_tell(s: Step, before: list[Step]) -> str:
    """Why step `s`, which passed, cannot be taken to pass its error-rate SLOs: an SLO an earlier step
    failed, and too few requests here for a failure rate at its limit to have shown (`EVIDENCE`). "" when
    it can."""
    failed_before = {
        v["threshold"] for p in before for v in p.verdicts if v.get("metric") == "error_rate" and not v["passed"]
    }
    for v in s.verdicts:
        limit = float(v.get("limit") or 0.0)
        if v["threshold"] in failed_before and v["op"] in ("<", "<=") and limit > 0 and s.requests * limit < EVIDENCE:
            need = math.ceil(EVIDENCE / limit)
            return (
                f"{v['threshold']} held on {s.requests:,} requests, too few to tell after higher loads failed it "
                f"(at least {need:,} needed: a longer --step-time)"
            )
    return ""


def table_header(unit: str, connections: bool = False) -> str:
    columns = f"{'offered':>11} {'achieved/s':>11} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} {'errors':>7}"
    return f"{'step':>5} {columns}" + (f" {'conns':>6}" if connections else "") + "  verdict"


def table_row(i: int | str, s: Step, unit: str, connections: bool = False, probe: str = "") -> str:
    """One step's line; `probe`: the probe's verdict text (the scale, not a pass or a fail)."""
    offered = f"{s.load:,.0f}{'' if unit == 'users' else '/s'}" if s.load else "closed"
    conns = f" {s.connections or 0:>6,}" if connections else ""
    return (
        f"{i!s:>5} {offered:>11} {s.achieved:>11,.0f} {s.p50_us / 1000:>8.2f} {s.p95_us / 1000:>8.2f} "
        f"{s.p99_us / 1000:>8.2f} {s.error_rate * 100:>6.2f}%{conns}  {probe or s.summary()}"
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
    probe_says: str = "the scale: what the target does flat out",
    whole: bool = False,
    climbing: bool = False,
    show_connections: bool = False,
    **settings: Any,
) -> tuple[Outcome, dict[str, Any] | None]:
    """Runs `find` with its per-step table on stdout (after the `probe` row, if any, saying
    `probe_says`; a connections column with `show_connections`) and the verdict line; returns the
    outcome and the result document to report: the highest passing step's (else the last step's), with
    its `limit`. Ctrl-C ends the search with what it has."""
    say(table_header(unit, show_connections))
    if probe is not None:
        say(table_row("probe", probe, unit, show_connections, probe_says))
    rows = iter(range(1, 1000))
    steps: list[Step] = []

    def measured(load: float) -> Step:
        s = measure(load)
        steps.append(s)
        return s

    def row(s: Step) -> None:
        say(table_row(next(rows), s, unit, show_connections))

    try:
        outcome = find(measured, start, most, whole=whole, on_step=row, climbing=climbing)
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

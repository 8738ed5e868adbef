"""`squall compare --fail-if EXPR`: regression gates, each a change from the first run (the baseline)
that fails the comparison (exit code 99, as a failed --threshold) when a later run shows it.

An expression is `[ENDPOINT:] METRIC OP SIGNED-CHANGE`:
- METRIC: a latency percentile `p50`, `p95`, `p99.9`, ... (`median`), `max`, `min`, `mean` (`avg`),
  `rps`, the counts `requests` and `failures`: their change relative to the baseline's, in `%`;
  `error_rate` (`fail_ratio`): its change in percentage points, `pp`.
- OP: `>`, `>=`, `<`, `<=`; the change carries its sign: `p95>+10%` fails when p95 rose by more than
  10%, `rps<-5%` when throughput fell by more than 5%, `error_rate>+0.5pp` when the error rate rose by
  more than half a point.
- ENDPOINT, as a threshold's: `GET /api/x` or a bare name (each method of it), else the aggregate.

The values are the ones `--threshold` reads (exact percentiles from the runs' histograms; rates over
the time counted, after a --reset-stats from the reset). An endpoint of the baseline that a later run
lacks fails, as does a scope that names nothing in the baseline: a typo must not pass. A value the
baseline has at 0 (no failures) compares in % only to 0: any later value is a change without a
percentage, which a rise gate (`>`) fails."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from squall import thresholds
from squall.report.totals import counted_s

_EXPR = re.compile(
    r"^\s*(?:(?P<scope>.+?)\s*:\s*)?"
    r"(?P<metric>[a-z_]+(?:\.[a-z_0-9.]+)?|p\d+(?:\.\d+)?)\s*"
    r"(?P<op><=|>=|<|>)\s*"
    r"(?P<sign>[+-])\s*(?P<value>\d+(?:\.\d+)?|\.\d+)\s*(?P<unit>%|pp)\s*$"
)
_RELATIVE = ("latency", "rps", "requests", "failures")


@dataclass(frozen=True)
class Gate:
    text: str
    threshold: thresholds.Threshold  # the metric and scope, as a threshold reads them (its op and limit unused)
    op: str
    limit: float  # a fraction of the baseline's value (`%`), or percentage points (`pp`, the error rate)

    @property
    def points(self) -> bool:
        return self.threshold.metric == "error_rate"

    def shown(self, value: float | None) -> str:
        return self.threshold.shown(value)

    def change(self, base: float, new: float) -> float:
        """The change from `base` to `new` in the gate's terms: points, or a fraction of `base` (an
        infinite one from a baseline of 0)."""
        if self.points:
            return (new - base) * 100
        if base == 0:
            return 0.0 if new == 0 else math.copysign(math.inf, new)
        return (new - base) / base

    def change_shown(self, change: float) -> str:
        if self.points:
            return f"{change:+.2f} pp"
        return "from 0" if math.isinf(change) else f"{change * 100:+.1f}%"


def parse(text: str) -> Gate:
    """One expression; ValueError with a one-line reason when it is not one."""
    m = _EXPR.match(text)
    if not m:
        unsigned = _EXPR.match(re.sub(r"(<=|>=|<|>)\s*(?=[\d.])", r"\1+", text, count=1))
        why = ": a change carries its sign (+10%, -5%)" if unsigned else ""
        raise ValueError(f"invalid --fail-if '{text}'{why} (expected like 'p95>+10%', 'rps<-5%', 'error_rate>+1pp')")
    scope = f"{m['scope']}: " if m["scope"] else ""
    metric, unit = m["metric"], m["unit"]
    try:  # the metric and scope as a threshold reads them (its limit unused)
        t = thresholds.parse(f"{scope}{metric}>0{'%' if metric in ('error_rate', 'fail_ratio') else ''}")
    except ValueError as e:
        why = str(e).partition("': ")[2] or f"unknown metric '{metric}'"
        raise ValueError(f"invalid --fail-if '{text}': {why}") from None
    if t.metric not in (*_RELATIVE, "error_rate"):
        raise ValueError(f"invalid --fail-if '{text}': {metric} is an MQTT delivery count, not compared")
    if t.metric == "error_rate" and unit != "pp":
        raise ValueError(f"invalid --fail-if '{text}': the error rate changes in percentage points (pp)")
    if t.metric != "error_rate" and unit != "%":
        raise ValueError(f"invalid --fail-if '{text}': {metric} changes in % of the first run's")
    value = float(m["value"]) * (-1 if m["sign"] == "-" else 1)
    return Gate(text.strip(), t, m["op"], value if unit == "pp" else value / 100)


@dataclass
class Verdict:
    gate: Gate
    run: str  # the later run's label
    passed: bool
    detail: str  # "p95 12.000 ms -> 14.100 ms (+17.5%)", or why it cannot tell

    def to_json(self) -> dict[str, Any]:
        return {"fail_if": self.gate.text, "run": self.run, "passed": self.passed, "detail": self.detail}


def _value(t: thresholds.Threshold, doc: dict[str, Any], e: dict[str, Any]) -> float | None:
    return thresholds.measured(t, doc, e, counted_s(doc))


def evaluate(gate: Gate, base: dict[str, Any], label: str, new: dict[str, Any]) -> Verdict:
    """The gate on run `new` (named `label`) against the baseline: every endpoint its scope names in
    the baseline is compared with the same method and name in `new`; the first that fails is shown."""
    t = gate.threshold
    named = thresholds.endpoints(t, base)
    if not named:
        return Verdict(gate, label, False, f"no endpoint '{t.scope}' in the first run")
    shown: Verdict | None = None
    for e in named:
        where = "" if t.scope is None else f"{e['method']} {e['name']}: "
        if t.scope is None:
            other: dict[str, Any] | None = new["aggregate"]
        else:
            other = next((x for x in new["endpoints"] if (x["method"], x["name"]) == (e["method"], e["name"])), None)
        if other is None:
            verdict = Verdict(gate, label, False, f"{where}not in this run")
        else:
            before, after = _value(t, base, e), _value(t, new, other)
            if before is None or after is None:
                verdict = Verdict(gate, label, False, f"{where}no requests completed")
            else:
                change = gate.change(before, after)
                failed = thresholds.OPS[gate.op](change, gate.limit)
                detail = f"{where}{gate.shown(before)} -> {gate.shown(after)} ({gate.change_shown(change)})"
                verdict = Verdict(gate, label, not failed, detail)
        if shown is None or (shown.passed and not verdict.passed):
            shown = verdict
    assert shown is not None
    return shown


def evaluate_runs(gates: list[Gate], runs: list[tuple[str, dict[str, Any]]]) -> list[Verdict]:
    """Every gate on every run after the first, against the first."""
    base = runs[0][1]
    return [evaluate(g, base, label, doc) for g in gates for label, doc in runs[1:]]


def block(verdicts: list[Verdict], baseline: str) -> str:
    """The verdicts, after the comparison's table: a line each, then the count (and the exit code)."""
    if not verdicts:
        return ""
    width = max(len(v.gate.text) for v in verdicts)
    runs = max(len(v.run) for v in verdicts)
    lines = [f"Regression gates (--fail-if), against {baseline}"]
    for v in verdicts:
        mark = "pass" if v.passed else "FAIL"
        lines.append(f"  {mark}  {v.gate.text:<{width}}  {v.run:<{runs}}  {v.detail}")
    failed = sum(not v.passed for v in verdicts)
    lines.append(f"  {len(verdicts) - failed} passed, {failed} failed{' (exit code 99)' if failed else ''}")
    return "\n".join(lines) + "\n"

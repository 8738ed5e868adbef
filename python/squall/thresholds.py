"""Thresholds: pass/fail criteria on a run's numbers, for CI (`--threshold 'p95<300ms'`, exit code 99).

An expression is `[ENDPOINT:] METRIC OP VALUE[UNIT]`:
- METRIC: a latency percentile `p50`, `p95`, `p99.9`, ... (`median` is p50), `max`, `min`, `mean`
  (`avg`); `error_rate` (`fail_ratio`); `rps`; the counts `requests` and `failures`; for MQTT the
  delivery counts `lost`, `delivered`, `duplicated`, `out_of_order`, `unsent`, `published`, and
  `publish.p95`, `deliver.p99`, `connect.max` ... (the latency of PUBLISH, DELIVER or CONNECT).
- OP: `<`, `<=`, `>`, `>=`, `==`, `!=`.
- VALUE: times in `us`, `ms` (the default, as k6's) or `s`; `error_rate` as a fraction or with `%`;
  `rps` per second; counts as whole numbers.
- ENDPOINT (optional, before a colon): `GET /api/cases` or just the name `/api/cases` (every method with
  that name must pass); without it, the aggregate of the run. A name that matches no endpoint fails:
  a typo must not pass silently.

Percentiles of the final verdict are exact: read from the run's HDR histograms at any percentile.
During a run (`--threshold-abort`) they come from the live totals: exact at the reported percentiles
(50, 66, ..., 99.99, 100), else the next point of the percentile spectrum above the one asked (never
lower than the exact value)."""

from __future__ import annotations

import argparse
import operator
import os
import re
import sys
from dataclasses import dataclass
from typing import Any, Callable

from squall import files
from squall.durations import parse_duration
from squall.errors import UsageError
from squall.report.totals import counted_s

OPS: dict[str, Callable[[float, float], bool]] = {
    "<=": operator.le,
    ">=": operator.ge,
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    ">": operator.gt,
}
TIME_UNITS = {"us": 1.0, "µs": 1.0, "ms": 1000.0, "s": 1_000_000.0}
COUNTS = ("requests", "failures")
MQTT_COUNTS = ("lost", "delivered", "duplicated", "out_of_order", "unsent", "published")
MQTT_SCOPES = {"publish": "PUBLISH", "deliver": "DELIVER", "connect": "CONNECT"}

_EXPR = re.compile(
    r"^\s*(?:(?P<scope>.+?)\s*:\s*)?"
    r"(?P<metric>[a-z_]+(?:\.[a-z_0-9.]+)?|p\d+(?:\.\d+)?)\s*"
    r"(?P<op><=|>=|==|!=|<|>)\s*"
    r"(?P<value>\d+(?:\.\d+)?|\.\d+)\s*(?P<unit>us|µs|ms|s|%|/s)?\s*$"
)


@dataclass(frozen=True)
class Threshold:
    text: str
    scope: str | None  # the endpoint ("GET /x", "/x", or "PUBLISH" for MQTT's metrics); None: all
    metric: str  # "latency", "error_rate", "rps", or a count's name
    stat: str  # for latency: "p95.5", "max", "min", "mean"; else ""
    op: str
    limit: float  # µs for latency, a fraction for error_rate, per second for rps, else a count

    def shown(self, value: float | None) -> str:
        """A measured value in the threshold's own terms."""
        if value is None:
            return "n/a"
        if self.metric == "latency":
            return f"{value / 1000:.3f} ms" if value < 1_000_000 else f"{value / 1e6:.3f} s"
        if self.metric == "error_rate":
            return f"{value * 100:.3f}%"
        if self.metric == "rps":
            return f"{value:,.1f}/s"
        return f"{value:,.0f}"


def parse(text: str) -> Threshold:
    """One expression; ValueError with a one-line reason when it is not one."""
    m = _EXPR.match(text)
    if not m:
        raise ValueError(f"invalid threshold '{text}' (expected like p95<300ms, error_rate<1%, 'GET /x: max<2s')")
    scope, metric, op, unit = m["scope"], m["metric"], m["op"], m["unit"]
    value = float(m["value"])
    if "." in metric and not re.fullmatch(r"p\d+(\.\d+)?", metric):
        prefix, _, metric = metric.partition(".")
        if prefix not in MQTT_SCOPES:
            raise ValueError(f"invalid threshold '{text}': unknown metric '{prefix}.{metric}'")
        if scope:
            raise ValueError(f"invalid threshold '{text}': {prefix}.{metric} names its endpoint already")
        scope = MQTT_SCOPES[prefix]
    stat = {"median": "p50", "avg": "mean"}.get(metric, metric)
    if re.fullmatch(r"p\d+(\.\d+)?", stat) or stat in ("max", "min", "mean"):
        if stat.startswith("p") and not 0 <= float(stat[1:]) <= 100:
            raise ValueError(f"invalid threshold '{text}': a percentile is between p0 and p100")
        if unit not in (None, *TIME_UNITS):
            raise ValueError(f"invalid threshold '{text}': a time takes us, ms or s")
        return Threshold(text.strip(), scope, "latency", stat, op, value * TIME_UNITS[unit or "ms"])
    if stat in ("error_rate", "fail_ratio"):
        if unit not in (None, "%"):
            raise ValueError(f"invalid threshold '{text}': an error rate is a fraction or a percentage")
        limit = value / 100 if unit == "%" else value
        if limit > 1:
            raise ValueError(f"invalid threshold '{text}': an error rate is at most 100%")
        return Threshold(text.strip(), scope, "error_rate", "", op, limit)
    if stat == "rps":
        if unit not in (None, "/s"):
            raise ValueError(f"invalid threshold '{text}': rps is a number per second")
        return Threshold(text.strip(), scope, "rps", "", op, value)
    if stat in COUNTS or stat in MQTT_COUNTS:
        if unit is not None or value != int(value):
            raise ValueError(f"invalid threshold '{text}': {stat} is a whole number")
        if stat in MQTT_COUNTS and scope:
            raise ValueError(f"invalid threshold '{text}': {stat} is the run's, not an endpoint's")
        return Threshold(text.strip(), scope, stat, "", op, value)
    raise ValueError(f"invalid threshold '{text}': unknown metric '{metric}'")


def parse_all(texts: list[str] | None) -> list[Threshold]:
    return [parse(t) for t in texts or []]


# What a value is read from: the run's result document (final) or its live totals in the same shape.
Percentile = Callable[[dict[str, Any], float], "float | None"]


def exact_percentile(endpoint: dict[str, Any], p: float) -> float | None:
    """From the endpoint's serialized histogram (a final result): exact at any percentile."""
    key = f"{p:g}"
    if key in (endpoint.get("percentiles_us") or {}):
        return float(endpoint["percentiles_us"][key])
    if endpoint.get("histogram"):
        from squall import _engine  # the compiled engine only when a histogram is read: start-up

        return float(_engine.histogram_percentiles(endpoint["histogram"], [p])[0])
    return live_percentile(endpoint, p)


def live_percentile(endpoint: dict[str, Any], p: float) -> float | None:
    """From live totals: exact at the reported percentiles, else the spectrum's next point above."""
    key = f"{p:g}"
    pct = endpoint.get("percentiles_us") or {}
    if key in pct:
        return float(pct[key])
    for q, v in endpoint.get("spectrum") or []:
        if q >= p:
            return float(v)
    return None


def endpoints(t: Threshold, doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The endpoints of `doc` the threshold's scope names (the aggregate without one)."""
    if t.scope is None:
        return [doc["aggregate"]]
    scope = t.scope.strip()
    exact = [e for e in doc["endpoints"] if f"{e['method']} {e['name']}" == scope]
    return exact or [e for e in doc["endpoints"] if e["name"] == scope or e["method"] == scope]


def measured(
    t: Threshold, doc: dict[str, Any], e: dict[str, Any], duration: float, percentile: Percentile = exact_percentile
) -> float | None:
    """The threshold's metric on endpoint `e` of `doc` (counted over `duration`); None without requests."""
    v = _mqtt_rps(doc, e) if t.metric == "rps" and doc.get("mqtt") else None
    return _value(t, e, duration, percentile) if v is None else v


def _value(t: Threshold, e: dict[str, Any], duration: float, percentile: Percentile) -> float | None:
    if t.metric == "latency":
        if not e["requests"]:
            return None
        # p0 and p100 are the exact extremes (a histogram's bucket would give its edge: p0 a few
        # microseconds under the fastest request at millisecond latencies).
        if t.stat in ("max", "p100"):
            return float(e["max_us"])
        if t.stat in ("min", "p0"):
            return float(e["min_us"])
        if t.stat == "mean":
            return float(e["mean_us"])
        return percentile(e, float(t.stat[1:]))
    if t.metric == "error_rate":
        return e["failures"] / e["requests"] if e["requests"] else 0.0
    if t.metric == "rps":
        return e["requests"] / duration if duration > 0 else 0.0
    return float(e[t.metric])


def _mqtt_rps(doc: dict[str, Any], e: dict[str, Any]) -> float | None:
    """An MQTT run's rate as its summary and CSV give it (`locust_csv.measured_rates`: PUBLISH and
    DELIVER over the measured time, the whole run the sum of its rows); None where the run's duration
    serves (a run that only subscribes)."""
    from squall.report.locust_csv import measured_rates  # (start-up: only for an MQTT run's rps)

    rates = measured_rates(doc)
    if rates is None:
        return None
    key = ("", "Aggregated") if e is doc.get("aggregate") else (e.get("method", ""), e.get("name", ""))
    return rates[key][0] if key in rates else None


def _mqtt_count(name: str, doc: dict[str, Any]) -> float | None:
    m = doc.get("mqtt")
    if not m:
        return None
    if name in ("unsent", "published"):
        return float(m[name])
    delivery = m.get("delivery")
    return float(delivery[name]) if delivery else None


@dataclass
class Verdict:
    threshold: Threshold
    value: float | None
    passed: bool
    reason: str = ""

    def to_json(self) -> dict[str, Any]:
        t = self.threshold
        return {
            "threshold": t.text,
            "endpoint": t.scope,
            "metric": t.stat or t.metric,
            "op": t.op,
            "limit": t.limit,
            "value": self.value,
            "shown": t.shown(self.value),
            "passed": self.passed,
            "reason": self.reason,
        }


def evaluate(t: Threshold, doc: dict[str, Any], percentile: Percentile = exact_percentile) -> Verdict:
    """The verdict of one threshold on a result document (or live totals in its shape)."""
    if t.metric in MQTT_COUNTS:
        v = _mqtt_count(t.metric, doc)
        if v is None:
            return Verdict(t, None, False, "this run has no MQTT delivery counts (use --verify)")
        return Verdict(t, v, OPS[t.op](v, t.limit))
    named = endpoints(t, doc)
    if not named:
        return Verdict(t, None, False, f"no endpoint '{t.scope}' in this run")
    duration = counted_s(doc)
    worst: Verdict | None = None
    for e in named:  # every endpoint the scope names must pass; the one that fails is shown
        v = measured(t, doc, e, duration, percentile)
        if v is None:
            verdict = Verdict(t, None, False, "no requests completed")
        else:
            verdict = Verdict(t, v, OPS[t.op](v, t.limit))
        if worst is None or (worst.passed and not verdict.passed):
            worst = verdict
    assert worst is not None
    return worst


def evaluate_all(thresholds: list[Threshold], doc: dict[str, Any]) -> list[Verdict]:
    return [evaluate(t, doc) for t in thresholds]


def block(verdicts: list[Verdict], code: int = 0, why: str = "") -> str:
    """The verdict block printed at the end of a run. `code` and `why`: the run's exit code and its
    reason, said under the verdicts when the thresholds passed but the run still exits non-zero (failed
    requests under `-f`'s --exit-code-on-error, lost MQTT messages, a signal), so that "0 failed" is
    never followed by a silent 1."""
    if not verdicts:
        return ""
    width = max(len(v.threshold.text) for v in verdicts)
    lines = ["Thresholds"]
    for v in verdicts:
        mark = "pass" if v.passed else "FAIL"
        note = f"  ({v.reason})" if v.reason else ""
        lines.append(f"  {mark}  {v.threshold.text:<{width}}  measured {v.threshold.shown(v.value)}{note}")
    failed = sum(not v.passed for v in verdicts)
    theirs = " (exit code 99)" if failed and code in (0, 99) else ""  # (else the code line below says it)
    lines.append(f"  {len(verdicts) - failed} passed, {failed} failed{theirs}")
    if code not in (0, 99):
        lines.append(f"  exit code {code}: {why}" if why else f"  exit code {code}")
    return "\n".join(lines) + "\n"


class Watch:
    """`--threshold-abort`: the thresholds checked on the live totals once a second after the grace
    period; `failed` holds the verdicts that made the run stop (as k6's abortOnFail: a threshold
    failing at a check ends the run, after `grace` seconds so that a warm-up does not)."""

    def __init__(self, thresholds: list[Threshold], grace: float) -> None:
        self.thresholds = thresholds
        self.grace = grace
        self.failed: list[Verdict] = []

    def stops(self, live: dict[str, Any] | None, elapsed: float) -> bool:
        """True once, when the live view just read (None: nothing new) fails a threshold; says so."""
        if live is None or self.failed or not self.check(live["totals"], elapsed):
            return False
        sys.stderr.write(abort_message(self))
        return True

    def check(self, totals: dict[str, Any], elapsed: float) -> bool:
        """True when the run must stop now."""
        if self.failed or elapsed < self.grace or not totals.get("aggregate"):
            return bool(self.failed)
        doc = {**totals, "duration_s": elapsed}
        for t in self.thresholds:
            if t.metric in MQTT_COUNTS:
                continue  # delivery is known at the end only
            v = evaluate(t, doc, live_percentile)
            if not v.passed and v.value is not None:
                self.failed.append(v)
        return bool(self.failed)


def from_args(args: argparse.Namespace) -> tuple[list[Threshold], Watch | None]:
    """The command line's thresholds, checked before the run (a bad one: exit 2), and the watch that
    `--threshold-abort` asks for."""
    try:
        thresholds = parse_all(args.threshold)
        grace = parse_duration(args.threshold_grace, zero=True)  # (0: judged from the first second)
    except ValueError as e:
        raise UsageError(str(e)) from None
    if args.threshold_abort and not thresholds:
        raise UsageError("--threshold-abort needs at least one --threshold")
    if getattr(args, "command", None) == "bench":  # (a locustfile's MQTT clients record PUBLISH too)
        for t in thresholds:
            if t.metric in MQTT_COUNTS or t.scope in MQTT_SCOPES.values():
                # Known before the run: it ran whole, then failed with 99 ("no endpoint PUBLISH").
                raise UsageError(f"--threshold {t.text}: an MQTT measure (squall mqtt's), not squall bench's")
    # A --processes worker has a share of the load: the parent judges the merged run, never a worker.
    worker = os.environ.get("SQUALL_WORKER")
    return thresholds, (Watch(thresholds, grace) if args.threshold_abort and not worker else None)


def abort_message(watch: Watch) -> str:
    v = watch.failed[0]
    return f"squall: stopping: threshold {v.threshold.text} failed (measured {v.threshold.shown(v.value)})\n"


def judge(result: dict[str, Any], thresholds: list[Threshold], watch: Watch | None) -> list[Verdict]:
    """The final verdicts, put into the result (`thresholds`, and `stop_reason` "threshold" when
    `--threshold-abort` stopped the run); the command prints them (`say`) once it knows its exit code."""
    if not thresholds:
        return []
    verdicts = evaluate_all(thresholds, result)
    result["thresholds"] = [v.to_json() for v in verdicts]
    if watch is not None and watch.failed:
        result["stop_reason"] = "threshold"
    return verdicts


def say(verdicts: list[Verdict], code: int, why: str, out: Any = None) -> None:
    """The verdict block (none without thresholds) on `out` (stdout by default), with the exit code: the
    command's once its outputs were written (said after them: an output that could not be written makes
    it 5, not the thresholds' 99)."""
    final = files.exit_code(code)
    if final != code:
        code, why = final, "an output could not be written (said above)"
    if verdicts:
        out = out or sys.stdout
        out.write("\n" + block(verdicts, code, why))
        out.flush()


def failed(verdicts: list[Verdict]) -> bool:
    return any(not v.passed for v in verdicts)

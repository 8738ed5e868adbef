"""Locust's console tables: the stats table (printed every 2 s and at the end), the response time
percentiles table, and the error report. Squall's percentiles are exact HDR values, not Locust's
rounded buckets, so that table's title says "exact" instead of "approximated"."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from squall.report import locust_errors
from squall.report.units import percentiles_us, reported_percentiles


def _ms(us: float) -> str:
    """Milliseconds as Locust prints them: whole numbers, with decimals below 10 ms."""
    v = us / 1000.0
    return f"{v:.0f}" if v >= 10 else f"{v:.2f}" if v < 1 else f"{v:.1f}"


def _rows(endpoints: list[dict[str, Any]], aggregate: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    rows = sorted(endpoints, key=lambda e: (e["name"], e["method"]))
    return rows, dict(aggregate, method="", name="Aggregated")


def stats_table(
    endpoints: list[dict[str, Any]],
    aggregate: dict[str, Any],
    duration_s: float,
    rates: Mapping[tuple[str, str], tuple[float, float]] | None = None,
) -> str:
    """`rates`: {(method, name): (req/s, failures/s)} for the recent window; else over the whole run."""
    rows, agg = _rows(endpoints, aggregate)
    width = max([len(r["name"]) for r in rows] + [30]) + 2
    head = (
        f"{'Type':<8} {'Name':<{width}} {'# reqs':>7} {'# fails':>13} | {'Avg':>7} {'Min':>7} {'Max':>7} "
        f"{'Med':>7} | {'req/s':>8} {'failures/s':>10}"
    )
    sep = "|".join("-" * n for n in (8, width + 1, 7, 14, 8, 8, 8, 8, 9, 11))

    def line(r: dict[str, Any]) -> str:
        n, f = r["requests"], r["failures"]
        pct = 100.0 * f / n if n else 0.0
        if rates is not None and (r["method"], r["name"]) in rates:
            rps, fps = rates[(r["method"], r["name"])]
        else:
            rps = n / duration_s if duration_s > 0 else 0.0
            fps = f / duration_s if duration_s > 0 else 0.0
        med = r["percentiles_us"].get("50", 0) if n else 0
        if n and not r["percentiles_us"]:  # counted, none timed (MQTT messages without a send time)
            stat = " ".join(f"{'N/A':>7}" for _ in range(4))
        elif n:
            stat = f"{_ms(r['mean_us']):>7} {_ms(r['min_us']):>7} {_ms(r['max_us']):>7} {_ms(med):>7}"
        else:
            stat = f"{0:>7} {0:>7} {0:>7} {0:>7}"
        fails = f"{f}({pct:.2f}%)"
        return f"{r['method']:<8} {r['name']:<{width}} {n:>7} {fails:>13} | {stat} | {rps:>8.2f} {fps:>10.2f}"

    out = [head, sep] + [line(r) for r in rows] + [sep, line(agg)]
    return "\n".join(out) + "\n"


def percentiles_table(endpoints: list[dict[str, Any]], aggregate: dict[str, Any]) -> str:
    rows, agg = _rows(endpoints, aggregate)
    width = max([len(r["name"]) for r in rows] + [30]) + 2
    reported = reported_percentiles()  # Locust's PERCENTILES_TO_REPORT, as a locustfile may set it
    cols = [label for label, _p in reported]
    percents = [p for _label, p in reported]
    head = f"{'Type':<8} {'Name':<{width}} " + " ".join(f"{c:>7}" for c in cols) + f" {'# reqs':>7}"
    sep = f"{'-' * 8}|{'-' * (width + 1)}|" + "|".join("-" * 7 for _ in cols) + "|" + "-" * 8

    def line(r: dict[str, Any]) -> str:
        times = percentiles_us(r, percents)
        vals = [_ms(t) for t in times] if times is not None else ["N/A"] * len(percents)
        return f"{r['method']:<8} {r['name']:<{width}} " + " ".join(f"{v:>7}" for v in vals) + f" {r['requests']:>7}"

    out = ["Response time percentiles (exact)", head, sep] + [line(r) for r in rows] + [sep, line(agg)]
    return "\n".join(out) + "\n"


def error_report(errors: list[dict[str, Any]], script: bool = False) -> str:
    """Locust's error report; a script's failures in Locust's words (squall.report.locust_errors)."""
    if not errors:
        return ""
    out = ["Error report", f"{'# occurrences':<20} Error", f"{'-' * 20}|{'-' * 60}"]
    for e in errors:
        out.append(f"{e['count']:<20} {e['method']} {e['name']}: {locust_errors.console_text(e, script)}")
    return "\n".join(out) + "\n"


def exceptions_report(exceptions: list[dict[str, Any]]) -> str:
    if not exceptions:
        return ""
    out = ["Exceptions", f"{'# occurrences':<20} Exception"]
    for x in exceptions:
        out.append(f"{x['count']:<20} {x['message']}")
        out.append(x["traceback"].rstrip())
    return "\n".join(out) + "\n"

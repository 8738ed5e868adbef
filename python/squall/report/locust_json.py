"""Locust's JSON stats (`--json` on stdout, `--json-file NAME` into NAME.json) from squall's result:
the list `locust.stats.RequestStats.serialize_stats()` returns, so that tools reading Locust's JSON
read squall's.

Policy, field by field, as Locust's `StatsEntry.serialize()` (its `StatsEntryDict`, in that order):
one row per endpoint that has requests, no "Aggregated" row (Locust serializes only its entries),
in the order the endpoints first appear in the run. Times are milliseconds as floats (Locust's are
`perf_counter` differences times 1000); `total_response_time` is the mean times the count.
`response_times` is Locust's bucketed distribution, rounded response time (ms) -> count, built from
the engine's exact histogram with Locust's `bucket_response_time` rule applied to each HDR bucket's
midpoint (HDR buckets are 1 µs wide below 2 ms and within 0.1% above, far inside Locust's two
significant digits). `num_reqs_per_sec`/`num_fail_per_sec` map a Unix second to its count, from the
result's per-second series: each series second (a second of the run, not of the clock) goes to the
clock second holding most of it, so the counts add up exactly to the totals (after a reset, Locust's
--reset-stats, they count from the second it fell in: slightly more). `start_time` and
`last_request_timestamp` are the start of the endpoint's first second (or the reset) and the end of
its last (the engine keeps counts per second, not request times). `num_none_requests` is 0: every squall request
has a response time."""

from __future__ import annotations

import json
import os
from typing import Any

from squall import files
from squall.report.hdr import recorded
from squall.report.totals import first_counted_second, reset_s

# The keys of Locust's StatsEntryDict, in its order.
FIELDS = (
    "name",
    "method",
    "last_request_timestamp",
    "start_time",
    "num_requests",
    "num_none_requests",
    "num_failures",
    "total_response_time",
    "max_response_time",
    "min_response_time",
    "total_content_length",
    "response_times",
    "num_reqs_per_sec",
    "num_fail_per_sec",
)


def bucket_response_time(ms: float) -> int:
    """Locust's rounding of a response time (ms) to about two significant digits: 147 -> 150,
    3432 -> 3400, 58760 -> 59000 (`locust.stats.bucket_response_time`)."""
    if ms < 100:
        return round(ms)
    if ms < 1000:
        return int(round(ms, -1))
    if ms < 10000:
        return int(round(ms, -2))
    return int(round(ms, -3))


def response_times(histogram: str) -> dict[int, int]:
    """Locust's `response_times` from an engine histogram (µs): bucketed ms -> count."""
    out: dict[int, int] = {}
    for value_us, count in recorded(histogram):
        key = bucket_response_time(value_us / 1000)
        out[key] = out.get(key, 0) + count
    return dict(sorted(out.items()))


def _per_second(result: dict[str, Any]) -> dict[tuple[str, str], list[tuple[float, int, int]]]:
    """(method, name) -> [(second's Unix start, requests, failures)] over the result's series."""
    start = float(result.get("start_unix", 0.0))
    since = first_counted_second(result)  # after a reset, Locust's entries count from it
    out: dict[tuple[str, str], list[tuple[float, int, int]]] = {}
    for second in result.get("timeseries") or []:
        if int(second.get("t", 0)) < since:
            continue
        unix = float(second.get("unix", start + second.get("t", 0)))
        for e in second.get("endpoints", []):
            if e["requests"] or e["failures"]:
                out.setdefault((e["method"], e["name"]), []).append((unix, e["requests"], e["failures"]))
    return out


def rows(result: dict[str, Any]) -> list[dict[str, Any]]:
    """Locust's serialized stats entries for a squall result (see the module's policy)."""
    seconds = _per_second(result)
    start = float(result.get("start_unix", 0.0))
    end = start + float(result.get("duration_s", 0.0))
    order = {key: (series[0][0], i) for i, (key, series) in enumerate(seconds.items())}
    endpoints = [e for e in result["endpoints"] if e["requests"] or e["failures"]]
    endpoints.sort(key=lambda e: order.get((e["method"], e["name"]), (end, len(order))))
    out = []
    for e in endpoints:
        series = seconds.get((e["method"], e["name"]), [])
        reqs: dict[int, int] = {}
        fails: dict[int, int] = {}
        for unix, n, f in series:
            key = round(unix)  # the clock second holding most of this second of the run
            if n:
                reqs[key] = reqs.get(key, 0) + n
            if f:
                fails[key] = fails.get(key, 0) + f
        first = max(series[0][0] if series else start, start + reset_s(result))
        last = min(series[-1][0] + 1.0, end) if series else end
        row = {
            "name": e["name"],
            "method": e["method"],
            "last_request_timestamp": max(last, first),
            "start_time": first,
            "num_requests": e["requests"],
            "num_none_requests": 0,
            "num_failures": e["failures"],
            "total_response_time": e["mean_us"] * e["requests"] / 1000,
            "max_response_time": e["max_us"] / 1000,
            "min_response_time": e["min_us"] / 1000 if e["requests"] else None,
            "total_content_length": e["body_bytes"],
            "response_times": response_times(e["histogram"]) if e.get("histogram") else {},
            "num_reqs_per_sec": reqs,
            "num_fail_per_sec": fails,
        }
        out.append({k: row[k] for k in FIELDS})
    return out


def dumps(result: dict[str, Any]) -> str:
    """What Locust's `--json` prints (`json.dumps(..., indent=4)`)."""
    return json.dumps(rows(result), indent=4)


def file_path(name: str) -> str:
    """Where `--json-file NAME` writes: NAME.json, as Locust's `save_stats_json` does."""
    return f"{name}.json"


def write(result: dict[str, Any], name: str) -> str:
    """Writes NAME.json as Locust does (its directory created); returns the path."""
    path = file_path(name)
    if directory := os.path.dirname(path):
        os.makedirs(directory, exist_ok=True)
    with files.replace(path) as f:
        json.dump(rows(result), f, indent=4)
    return path


def is_locust_stats(doc: Any) -> bool:
    """Whether a JSON document is Locust's stats list (what `--json-file` writes), not a squall result."""
    return isinstance(doc, list) and all(isinstance(r, dict) and "num_requests" in r for r in doc)

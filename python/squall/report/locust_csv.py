"""The four CSV files of `locust --csv PREFIX`, with Locust's exact names and headers, so dashboards
built on them keep working. Times are milliseconds; unlike Locust's rounded buckets, percentiles are
exact HDR values (to the microsecond)."""

from __future__ import annotations

import bisect
import csv
import io
import math
from collections.abc import Iterator
from typing import Any

from squall import _engine, files
from squall.report import locust_errors
from squall.report.totals import counted_s, first_counted_second
from squall.report.units import PERCENTILE_KEYS, ms_exact, percentiles_us, reported_percentiles

PCT_COLUMNS = [f"{k}%" for k in PERCENTILE_KEYS]

# Locust's headers with its 11 percentiles; the files' own are with the percentiles reported
# (`stats_header`, `history_header`: Locust's PERCENTILES_TO_REPORT, as a locustfile may set it).
STATS_HEADER = [
    "Type",
    "Name",
    "Request Count",
    "Failure Count",
    "Median Response Time",
    "Average Response Time",
    "Min Response Time",
    "Max Response Time",
    "Average Content Size",
    "Requests/s",
    "Failures/s",
    *PCT_COLUMNS,
]
HISTORY_HEADER = [
    "Timestamp",
    "User Count",
    "Type",
    "Name",
    "Requests/s",
    "Failures/s",
    *PCT_COLUMNS,
    "Total Request Count",
    "Total Failure Count",
    "Total Median Response Time",
    "Total Average Response Time",
    "Total Min Response Time",
    "Total Max Response Time",
    "Total Average Content Size",
]
FAILURES_HEADER = ["Method", "Name", "Error", "Occurrences", "First Seen", "Last Seen"]
EXCEPTIONS_HEADER = ["Count", "Message", "Traceback", "Nodes"]
THRESHOLDS_HEADER = ["Threshold", "Endpoint", "Measured", "Shown", "Passed", "Reason"]


def _number(s: dict[str, Any], key: str) -> float | None:
    """`s[key]` if it is a finite number, else None: a saved result (`squall report`) may lack a field or
    hold null where the engine's own documents never do (squall.inputs lets such files through, as the
    page tolerates them), and a CSV cell is then empty rather than the report failing."""
    value = s.get(key)
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return value
    return None


def _ms(s: dict[str, Any], key: str, missing: Any = "") -> Any:
    value = _number(s, key)
    return missing if value is None else ms_exact(value)


def _with_percentiles(header: list[str], columns: list[str]) -> list[str]:
    """`header` with the reported percentiles' columns where Locust's 11 are."""
    at = header.index(PCT_COLUMNS[0])
    return [*header[:at], *columns, *header[at + len(PCT_COLUMNS) :]]


def stats_header() -> list[str]:
    return _with_percentiles(STATS_HEADER, [label for label, _p in reported_percentiles()])


def history_header() -> list[str]:
    return _with_percentiles(HISTORY_HEADER, [label for label, _p in reported_percentiles()])


def _reported() -> list[tuple[str, float]]:
    """(key in an entry's `percentiles_us`, percent) of each reported percentile: made once for a
    file's rows (a key's formatting doubled the time of a history row's percentiles, 11 to 20 µs)."""
    return [(f"{p:g}", p) for _label, p in reported_percentiles()]


def _percentiles(s: dict[str, Any], reported: list[tuple[str, float]] | None = None) -> list[str]:
    """The entry's response times at the `reported` percentiles (`_reported`), in milliseconds."""
    reported = reported if reported is not None else _reported()
    pct = s.get("percentiles_us")
    if not isinstance(pct, dict) or not pct:  # nothing timed (or, with MQTT, messages without a send time)
        return ["N/A"] * len(reported)
    if all(k in pct for k, _p in reported):  # (the engine's own: no histogram read)
        return [_ms(pct, k, "N/A") for k, _p in reported]
    times = percentiles_us(s, [p for _k, p in reported])
    return [ms_exact(t) for t in times] if times is not None else ["N/A"] * len(reported)


def _avg_size(s: dict[str, Any]) -> float:
    n, size = _number(s, "requests"), _number(s, "body_bytes")
    return _clean(size / n) if n and size is not None else 0


def _clean(x: float) -> float:
    """A computed mean or rate without binary noise (0.19060999999999997 is 0.19061): six decimals, more
    than the microsecond and the request count hold."""
    return round(x, 6)


def measured_rates(result: dict[str, Any]) -> dict[tuple[str, str], tuple[float, float]] | None:
    """An MQTT run's rates as its summary gives them, {(method, name): (per second, failures per
    second)}: PUBLISH and DELIVER over the measured time (`mqtt.measured_s`: publishing, the connect
    phase aside), CONNECT over the run, and the Aggregated row the sum of the rows (over one duration
    it was neither: the CSV read 987.96 a second where the summary read 1,000.00). None for any other
    run, whose rates are over its duration."""
    m = result.get("mqtt")
    if not m or m.get("subscribe_only"):
        return None
    run = result.get("duration_s") or 0.0
    t = m.get("measured_s") or run
    rates = {}
    for e in result.get("endpoints") or []:
        d = t if e["method"] in ("PUBLISH", "DELIVER") else run
        rates[(e["method"], e["name"])] = (e["requests"] / d if d else 0.0, e["failures"] / d if d else 0.0)
    rates[("", "Aggregated")] = (sum(r for r, _ in rates.values()), sum(f for _, f in rates.values()))
    return rates


def stats_row(
    type_: str, name: str, s: dict[str, Any], duration: float, rate: tuple[float, float] | None = None
) -> list[Any]:
    """A row of the stats CSV; its rates over `duration`, or `rate` (per second, failures per second)."""
    n, failures, mean = s["requests"], s["failures"], _number(s, "mean_us")
    pct = s.get("percentiles_us")
    if rate is not None:
        rps, fps = _clean(rate[0]), _clean(rate[1])
    else:
        rps = _clean(n / duration) if duration > 0 else 0
        fps = _clean(failures / duration) if duration > 0 else 0
    return [
        type_,
        name,
        n,
        failures,
        _ms(pct, "50", 0) if isinstance(pct, dict) and pct else 0,
        _clean(mean / 1000.0) if mean is not None else "",
        _ms(s, "min_us"),
        _ms(s, "max_us"),
        _avg_size(s),
        rps,
        fps,
        *_percentiles(s),
    ]


def _running_totals(points: list[dict[str, Any] | None]) -> list[list[Any]]:
    """The history's seven Total columns after each of `points` (an entry's seconds in order, None for
    one without its requests), as the engine's `cumulative` has them for the aggregate: counts and
    bytes added up, the exact minimum and maximum, the median and mean of the histograms added up (to
    the histogram's resolution, clamped to that minimum and maximum)."""
    sums = _engine.running_histogram([(p.get("histogram") or "") if p else "" for p in points])
    n = failures = body = 0
    lo: float | None = None
    hi = 0.0
    timed_before = 0
    out: list[list[Any]] = []
    for i, p in enumerate(points):
        timed = sums.counts[i]
        if p is not None:
            n += int(_number(p, "requests") or 0)
            failures += int(_number(p, "failures") or 0)
            body += int(_number(p, "body_bytes") or 0)
            if timed > timed_before:  # its latencies recorded: its min and max are times
                low, high = _number(p, "min_us"), _number(p, "max_us")
                if low is not None:
                    lo = low if lo is None else min(lo, low)
                if high is not None:
                    hi = max(hi, high)
        timed_before = timed
        median, mean = float(sums.medians_us[i]), sums.means_us[i]
        if lo is not None:
            median, mean = min(max(median, lo), hi), min(max(mean, lo), hi)
        out.append(
            [
                n,
                failures,
                ms_exact(median),
                _clean(mean / 1000.0),
                ms_exact(lo or 0),
                ms_exact(hi),
                _clean(body / n) if n else 0,
            ]
        )
    return out


def history_rows(result: dict[str, Any], full_history: bool) -> Iterator[list[Any]]:
    """Locust's history: a row a second for the Aggregated entry, and with `full_history` one for every
    endpoint seen by then (sorted as Locust sorts its entries), each with its totals so far. After a
    reset (`reset_s`) the totals count from the second it fell in, as the live view's do."""
    seconds = result["timeseries"]
    since = first_counted_second(result)
    counted = [sec if int(sec.get("t", 0)) >= since else None for sec in seconds]
    # Without a reset, the engine's own running totals.
    aggregate = _running_totals(counted) if since else [_cumulative(sec["cumulative"]) for sec in seconds]
    # Each endpoint's seconds with requests, kept sparse (a run of many names and seconds has few of
    # each name's), and its totals after each counted one: (second's index, totals).
    first_seen: dict[tuple[str, str], int] = {}  # (name, method) -> the first second it had requests in
    totals: dict[tuple[str, str], list[tuple[int, list[Any]]]] = {}
    if full_history:
        points: dict[tuple[str, str], list[tuple[int, dict[str, Any]]]] = {}
        for i, sec in enumerate(seconds):
            for e in sec["endpoints"]:
                key = (e["name"], e["method"])
                first_seen.setdefault(key, i)
                if counted[i] is not None:
                    points.setdefault(key, []).append((i, e))
        for key, pts in points.items():
            totals[key] = list(zip([i for i, _ in pts], _running_totals([e for _, e in pts])))
    reported = _reported()
    shown: list[tuple[str, str]] = []  # the endpoints seen so far, sorted
    arrivals = sorted((first, key) for key, first in first_seen.items())
    nxt = 0
    at = dict.fromkeys(first_seen, 0)  # each endpoint's next entry in `totals`
    last = dict.fromkeys(first_seen, _NO_TOTALS)
    for i, sec in enumerate(seconds):
        ts = int(sec["unix"]) + 1  # written at the end of the second, as Locust does
        users = sec["users"]
        if full_history:
            while nxt < len(arrivals) and arrivals[nxt][0] <= i:
                bisect.insort(shown, arrivals[nxt][1])
                nxt += 1
            present = {(e["name"], e["method"]): e for e in sec["endpoints"]}
            for key in shown:
                mine = totals.get(key)
                if mine and at[key] < len(mine) and mine[at[key]][0] == i:
                    last[key] = mine[at[key]][1]
                    at[key] += 1
                # (a second without its requests has a row too: Locust writes every entry every time)
                e = present.get(key) or _NONE_THIS_SECOND
                yield [ts, users, key[1], key[0], e["requests"], e["failures"], *_percentiles(e, reported), *last[key]]
        row = [ts, users, "", "Aggregated", sec["requests"], sec["failures"], *_percentiles(sec, reported)]
        yield [*row, *aggregate[i]]


# The Total columns of an entry with nothing counted yet (as `_running_totals` makes them).
_NO_TOTALS = [0, 0, ms_exact(0), 0.0, ms_exact(0), ms_exact(0), 0]
_NONE_THIS_SECOND: dict[str, Any] = {"requests": 0, "failures": 0}


def _cumulative(cum: dict[str, Any]) -> list[Any]:
    """The Total columns from a second's `cumulative` (the engine's running totals)."""
    return [
        cum["requests"],
        cum["failures"],
        ms_exact(cum["median_us"]),
        _clean(cum["mean_us"] / 1000.0),
        ms_exact(cum["min_us"]),
        ms_exact(cum["max_us"]),
        _clean(cum["body_bytes"] / cum["requests"]) if cum["requests"] else 0,
    ]


def _write_stats(result: dict[str, Any], f: Any) -> None:
    dur = counted_s(result)
    rates = measured_rates(result) or {}
    w = csv.writer(f)
    w.writerow(stats_header())
    for e in sorted(result["endpoints"], key=lambda e: (e["name"], e["method"])):
        w.writerow(stats_row(e["method"], e["name"], e, dur, rates.get((e["method"], e["name"]))))
    w.writerow(stats_row("", "Aggregated", result["aggregate"], dur, rates.get(("", "Aggregated"))))


def stats_csv(result: dict[str, Any]) -> str:
    """The `_stats.csv` file's text (the dashboard's download)."""
    out = io.StringIO(newline="")
    _write_stats(result, out)
    return out.getvalue()


def _stamp(start: float | None, offset: float | None) -> str:
    """Locust's UTC stamp of `start + offset` seconds, or empty for a saved result without both (or with
    a time no calendar holds: `datetime` ends at the year 9999)."""
    if start is None or offset is None or not 0 <= start + offset < 253_402_300_800:
        return ""
    return locust_errors.utc_stamp(start + offset)


def _failure_row(e: dict[str, Any], start: float | None, script: bool) -> list[Any]:
    status = e.get("status")
    if status is not None and _number(e, "status") is None:
        e = {**e, "status": None}  # a saved result's status that is not a number: the message instead
    return [
        e.get("method", ""),
        e.get("name", ""),
        locust_errors.csv_text(e, script),
        e.get("count", ""),
        _stamp(start, _number(e, "first_seen_s")),
        _stamp(start, _number(e, "last_seen_s")),
    ]


def _write_failures(result: dict[str, Any], out: Any) -> None:
    w = csv.writer(out)
    w.writerow(FAILURES_HEADER)
    start = _number(result, "start_unix")
    script = result.get("kind") == "script"
    for e in result.get("errors") or []:
        if isinstance(e, dict):
            w.writerow(_failure_row(e, start, script))


def _write_exceptions(result: dict[str, Any], out: Any) -> None:
    w = csv.writer(out)
    w.writerow(EXCEPTIONS_HEADER)
    for x in result.get("exceptions") or []:
        if isinstance(x, dict):
            w.writerow([x.get("count", ""), x.get("message", ""), x.get("traceback", ""), x.get("nodes", "local")])


def failures_csv(result: dict[str, Any]) -> str:
    """The `_failures.csv` file's text (the dashboard's download, Locust's /stats/failures/csv)."""
    out = io.StringIO(newline="")
    _write_failures(result, out)
    return out.getvalue()


def exceptions_csv(result: dict[str, Any]) -> str:
    """The `_exceptions.csv` file's text (the dashboard's download, Locust's /exceptions/csv)."""
    out = io.StringIO(newline="")
    _write_exceptions(result, out)
    return out.getvalue()


def downloads(result: dict[str, Any]) -> dict[str, str]:
    """The CSV files an HTML report offers, by file name (`squall.web.page.report`): the same text the
    dashboard serves for the run (stats, failures, and a locustfile run's exceptions), so that the
    report's page carries no second writer of Locust's columns."""
    out = {"stats.csv": stats_csv(result), "failures.csv": failures_csv(result)}
    if result.get("kind") == "script":
        out["exceptions.csv"] = exceptions_csv(result)
    return out


FILES = ("stats", "stats_history", "failures", "exceptions")  # prefix_NAME.csv, as Locust's --csv writes


def file_names(prefix: str) -> list[str]:
    """The files `write` makes for `prefix`."""
    return [f"{prefix}_{k}.csv" for k in FILES]


def write(result: dict[str, Any], prefix: str, full_history: bool = False) -> list[str]:
    paths = dict(zip(FILES, file_names(prefix)))
    with files.replace(paths["stats"], newline="") as f:
        _write_stats(result, f)
    with files.replace(paths["stats_history"], newline="") as f:
        w = csv.writer(f)
        w.writerow(history_header())
        w.writerows(history_rows(result, full_history))
    with files.replace(paths["failures"], newline="") as f:
        _write_failures(result, f)
    if result.get("thresholds"):  # squall's own file: Locust has no thresholds
        paths["thresholds"] = f"{prefix}_thresholds.csv"
        with files.replace(paths["thresholds"], newline="") as f:
            w = csv.writer(f)
            w.writerow(THRESHOLDS_HEADER)
            for t in result["thresholds"]:
                w.writerow([t["threshold"], t["endpoint"] or "", t["value"], t["shown"], t["passed"], t["reason"]])
    with files.replace(paths["exceptions"], newline="") as f:
        _write_exceptions(result, f)
    return list(paths.values())

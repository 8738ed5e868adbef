"""The driver's live view of a distributed run: the workers' seconds merged into one stream, and their
totals merged into one, as a single engine's `live()` would give them (`{cursor, timeseries, totals}`),
so that the console, the dashboard, the partial files and `--threshold-abort` take it unchanged.

- Exact: counts, bytes, users, status codes, errors, the Prometheus buckets, min, max, mean and
  standard deviation (pooled), of every second and of the totals.
- Exact too: live percentiles, min, max, mean, the spectrum and the buckets, from the histograms the
  workers' feeds carry (each second's, and the totals', cumulative): added by the engine
  (`_engine.merge_histograms`), so a merged percentile is the one a single engine fed every sample
  would give. The merged stream itself carries no histogram, as a single engine's live stream.
- Estimated, only for parts without a histogram (a worker of an older squall): each part's
  distribution is taken as piecewise linear through its percentiles (a second's eleven; the totals'
  spectrum, some 80 points up to the maximum), and the mixture, weighted by requests, is inverted in
  one sweep over all the points (O(K log K) for K points). The final result is merged from the
  workers' result histograms (`_engine.merge_results`): exact.
- Alignment: as `merge_results` aligns them, on wall-clock seconds from the earliest worker's start.
  A merged second is published once every running worker has sent it, or `LATE_S` after it ended on
  the wall clock; a worker's part that comes later still is left out of the live stream (counted in
  `late_parts`; the final result has it).

Pure code: no Ray, no I/O (the engine only adds histograms)."""

from __future__ import annotations

import math
import time
from typing import Any, Callable

from squall import _engine

SUMMED = ("requests", "failures", "body_bytes", "wire_bytes")
# Seconds after its end on the wall clock that a merged second waits for its parts: a worker publishes
# a second within one, the driver polls within one, and 32 workers on 2 busy cores added 0.2 (measured).
LATE_S = 3.0

Curve = list[tuple[float, float]]  # (value, fraction at or below), value and fraction non-decreasing


def curve(part: dict[str, Any]) -> Curve:
    """A part's distribution through its minimum, its spectrum or percentiles, and its maximum."""
    points = [(float(part["min_us"]), 0.0)]
    spectrum = part.get("spectrum")
    if spectrum:
        points += [(float(v), float(q) / 100.0) for q, v in spectrum]
    else:
        pct = sorted((part.get("percentiles_us") or {}).items(), key=lambda kv: float(kv[0]))
        points += [(float(v), float(k) / 100.0) for k, v in pct]
    points.append((float(part["max_us"]), 1.0))
    points.sort()
    return points


def mixture_quantiles(curves: list[Curve], weights: list[float], qs: list[float]) -> list[float]:
    """inf{x : F(x) >= q} for each q (fractions) of F = the weighted mixture of the piecewise linear
    CDFs `curves`: one sweep over their points, keeping F's slope and intercept up to date."""
    total = sum(weights)
    events = sorted((x, i, j) for i, c in enumerate(curves) for j, (x, _) in enumerate(c))
    seg = [-1] * len(curves)  # each curve's current segment (-1: before its first point)
    contrib = [(0.0, 0.0)] * len(curves)  # its (intercept, slope) in F * total
    c_sum = s_sum = 0.0
    order = sorted(range(len(qs)), key=lambda k: qs[k])
    out = [0.0] * len(qs)
    k = 0
    prev_x: float | None = None
    n = len(events)
    e = 0
    while e < n and k < len(order):
        x = events[e][0]
        if prev_x is not None:
            # F on [prev_x, x) is linear: (c_sum + s_sum * t) / total, up to its left limit at x
            f_end = (c_sum + s_sum * x) / total
            while k < len(order) and qs[order[k]] <= f_end + 1e-12:
                q = qs[order[k]]
                f_start = (c_sum + s_sum * prev_x) / total
                if q <= f_start or s_sum <= 0:
                    out[order[k]] = prev_x
                else:
                    out[order[k]] = prev_x + (q * total - c_sum - s_sum * prev_x) / s_sum
                k += 1
        while e < n and events[e][0] == x:  # every curve with a point here moves to its next segment
            _, i, j = events[e]
            e += 1
            c, w = curves[i], weights[i]
            c_sum -= contrib[i][0]
            s_sum -= contrib[i][1]
            seg[i] = max(seg[i], j)
            jj = seg[i]
            if jj >= len(c) - 1:  # past its maximum
                new = (w * c[-1][1], 0.0)
            else:
                (x0, f0), (x1, f1) = c[jj], c[jj + 1]
                slope = (f1 - f0) / (x1 - x0) if x1 > x0 else 0.0  # x1 == x0: more events at x follow
                new = (w * (f0 - slope * x0), w * slope)
            contrib[i] = new
            c_sum += new[0]
            s_sum += new[1]
        # a jump at x (curves with several points at x): quantiles it covers are x itself
        f_at = (c_sum + s_sum * x) / total
        while k < len(order) and qs[order[k]] <= f_at + 1e-12:
            out[order[k]] = x
            k += 1
        prev_x = x
    last = events[-1][0] if events else 0.0
    for kk in order[k:]:
        out[kk] = last
    return out


def mixed_percentiles(parts: list[dict[str, Any]], keys: list[str]) -> dict[str, int]:
    """The percentiles `keys` ("50", "99.9", ...) of the union of `parts`, estimated from each part's
    spectrum or percentiles (see the module's docstring); a single part's own when there is one."""
    parts = [p for p in parts if p.get("requests")]
    if not parts:
        return {}
    if len(parts) == 1 and all(k in (parts[0].get("percentiles_us") or {}) for k in keys):
        return {k: parts[0]["percentiles_us"][k] for k in keys}
    values = mixture_quantiles(
        [curve(p) for p in parts], [float(p["requests"]) for p in parts], [float(k) / 100 for k in keys]
    )
    return {k: math.ceil(v - 1e-9) for k, v in zip(keys, values)}


def _keys(parts: list[dict[str, Any]]) -> list[str]:
    keys: set[str] = set()
    for p in parts:
        keys.update((p.get("percentiles_us") or {}).keys())
    return sorted(keys, key=float)


def merge_summaries(parts: list[dict[str, Any]], spectrum: bool = False) -> dict[str, Any]:
    """One summary (counts, min, max, mean, stdev, percentiles, status codes; the spectrum and the
    Prometheus buckets if asked) of several of the same endpoint or second: exact but for the
    percentiles (`mixed_percentiles`)."""
    out: dict[str, Any] = {k: sum(int(p.get(k, 0)) for p in parts) for k in SUMMED}
    timed = [p for p in parts if p.get("requests")]
    n = sum(int(p["requests"]) for p in timed)
    if timed and all(p.get("histogram") for p in timed):
        exact = _engine.merge_histograms([p["histogram"] for p in timed])
        # The parts' own minimum and maximum are exact; the histogram's are its buckets' bounds. Every
        # true percentile lies between them.
        lo, hi = min(p["min_us"] for p in timed), max(p["max_us"] for p in timed)
        out.update(
            min_us=lo,
            max_us=hi,
            mean_us=exact.mean_us,
            stdev_us=exact.stdev_us,
            percentiles_us={k: min(max(v, lo), hi) for k, v in exact.percentiles_us.items()},
            histogram="",
        )
        if spectrum:
            out["spectrum"] = [tuple(x) for x in exact.spectrum]
            out["buckets"] = [tuple(x) for x in exact.buckets]
        _add_status_codes(out, parts)
        return out
    if n:
        mean = sum(p["requests"] * p["mean_us"] for p in timed) / n
        var = sum(p["requests"] * (p["stdev_us"] ** 2 + (p["mean_us"] - mean) ** 2) for p in timed) / n
        out.update(
            min_us=min(p["min_us"] for p in timed),
            max_us=max(p["max_us"] for p in timed),
            mean_us=mean,
            stdev_us=math.sqrt(max(var, 0.0)),
        )
    else:
        out.update(min_us=0, max_us=0, mean_us=0.0, stdev_us=0.0)
    if spectrum:
        grid = sorted({float(q) for p in timed for q, _ in p.get("spectrum") or []})
        keys = _keys(timed)
        values = mixed_percentiles(timed, keys + [f"{q!r}" for q in grid])
        out["percentiles_us"] = {k: values[k] for k in keys if k in values}
        out["spectrum"] = [(q, values[f"{q!r}"]) for q in grid if f"{q!r}" in values]
        buckets: dict[int, int] = {}
        for p in parts:
            for bound, count in p.get("buckets") or []:
                buckets[bound] = buckets.get(bound, 0) + count
        out["buckets"] = sorted(buckets.items())
    else:
        out["percentiles_us"] = mixed_percentiles(timed, _keys(timed))
    _add_status_codes(out, parts)
    return out


def _add_status_codes(out: dict[str, Any], parts: list[dict[str, Any]]) -> None:
    if any("status_codes" in p for p in parts):
        codes: dict[str, int] = {}
        for p in parts:
            for code, count in (p.get("status_codes") or {}).items():
                codes[code] = codes.get(code, 0) + count
        out["status_codes"] = codes


def merge_totals(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """The workers' live totals as one: the aggregate, each endpoint (in order of first appearance),
    the errors (counts added; first and last seen as the earliest and latest)."""
    aggregates = [p["aggregate"] for p in parts if p.get("aggregate")]
    by_name: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for p in parts:
        for e in p.get("endpoints", []):
            by_name.setdefault((e["method"], e["name"]), []).append(e)
    errors: dict[tuple[str, str, str, str], dict[str, Any]] = {}
    for p in parts:
        for x in p.get("errors", []):
            key = (x["method"], x["name"], x["kind"], x["message"])
            if key not in errors:
                errors[key] = dict(x)
            else:
                m = errors[key]
                m["count"] += x["count"]
                m["first_seen_s"] = min(m["first_seen_s"], x["first_seen_s"])
                m["last_seen_s"] = max(m["last_seen_s"], x["last_seen_s"])
    return {
        "aggregate": {"method": "", "name": "Aggregated", **merge_summaries(aggregates, spectrum=True)}
        if aggregates
        else None,
        "endpoints": [{"method": m, "name": n, **merge_summaries(es, spectrum=True)} for (m, n), es in by_name.items()],
        "errors": sorted(errors.values(), key=lambda x: (-x["count"], x["message"])),
    }


def _merge_cumulative(parts: list[dict[str, Any]]) -> dict[str, Any]:
    timed = [p for p in parts if p.get("requests")]
    n = sum(p["requests"] for p in timed)
    out: dict[str, Any] = {k: sum(p.get(k, 0) for p in parts) for k in ("requests", "failures", "body_bytes")}
    if not n:
        return dict(out, median_us=0, mean_us=0.0, min_us=0, max_us=0)
    # The median of medians weighted by requests: an estimate, as the seconds' percentiles are.
    ordered = sorted(timed, key=lambda p: p["median_us"])
    seen, median = 0, ordered[-1]["median_us"]
    for p in ordered:
        seen += p["requests"]
        if seen >= n / 2:
            median = p["median_us"]
            break
    return dict(
        out,
        median_us=median,
        mean_us=sum(p["requests"] * p["mean_us"] for p in timed) / n,
        min_us=min(p["min_us"] for p in timed),
        max_us=max(p["max_us"] for p in timed),
    )


def _merge_schedules(parts: list[dict[str, Any]]) -> dict[str, Any] | None:
    schedules = [p["schedule"] for p in parts if p.get("schedule")]
    if not schedules:
        return None
    sent = sum(s["sent"] for s in schedules)
    lag_sum = sum(s["lag_sum_us"] for s in schedules)
    return {
        "sent": sent,
        "late": sum(s["late"] for s in schedules),
        "mean_lag_us": lag_sum / sent if sent else 0.0,
        "max_lag_us": max(s["max_lag_us"] for s in schedules),
        "lag_sum_us": lag_sum,
    }


def merge_seconds(t: int, unix: float, parts: list[dict[str, Any]]) -> dict[str, Any]:
    """The workers' points of one wall-clock second, as one point of the live stream."""
    point: dict[str, Any] = {"t": t, "unix": unix, "users": sum(p.get("users", 0) for p in parts)}
    point.update(merge_summaries(parts))
    point.pop("status_codes", None)
    by_name: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for p in parts:
        for e in p.get("endpoints", []):
            by_name.setdefault((e["method"], e["name"]), []).append(e)
    point["endpoints"] = [{"method": m, "name": n, **merge_summaries(es)} for (m, n), es in by_name.items()]
    point["cumulative"] = _merge_cumulative([p["cumulative"] for p in parts if p.get("cumulative")])
    schedule = _merge_schedules(parts)
    if schedule is not None:
        point["schedule"] = schedule
    return point


class LiveMerge:
    """The merged live stream of the workers: `add` what each poll brought, `read` as `Run.live` reads.

    `clock` is the wall clock."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock
        self.origin: float | None = None  # unix time of merged second 0, fixed when the first is published
        self.starts: dict[int, float] = {}  # worker -> its engine's start (unix)
        self.running: set[int] = set()
        self.waiting: dict[int, dict[int, dict[str, Any]]] = {}  # worker -> its second -> point
        self.last_t: dict[int, int] = {}  # worker -> the last of its seconds it sent
        self.worker_totals: dict[int, dict[str, Any]] = {}  # worker -> its latest live totals
        self.published = 0  # merged seconds published so far
        self.unread: list[dict[str, Any]] = []  # those not yet read (`read` from an older cursor)
        self.late_parts = 0
        self.totals: dict[str, Any] = {"aggregate": None, "endpoints": [], "errors": []}
        self._totals_stale = False

    def join(self, worker: int) -> None:
        self.running.add(worker)

    def leave(self, worker: int) -> None:
        """The worker sends no more (it finished, or was lost): its seconds no longer wait for it."""
        self.running.discard(worker)

    def add(self, worker: int, points: list[dict[str, Any]], totals: dict[str, Any] | None) -> None:
        for point in points:
            t = int(point["t"])
            self.starts.setdefault(worker, point["unix"] - t)
            if self.origin is not None and self._offset(worker) + t < self.published:
                self.late_parts += 1  # its merged second is out already
                continue
            self.waiting.setdefault(worker, {})[t] = point
            self.last_t[worker] = max(self.last_t.get(worker, -1), t)
        if totals:
            self.worker_totals[worker] = totals
            self._totals_stale = True

    def _offset(self, worker: int) -> int:
        """Merged second = the worker's own second + this."""
        assert self.origin is not None
        return round(self.starts[worker] - self.origin)

    def _ready(self, slot: int, now: float) -> bool:
        assert self.origin is not None
        if now >= self.origin + slot + 1 + LATE_S:
            return True
        return all(w in self.starts and self.last_t[w] + self._offset(w) >= slot for w in self.running)

    def flush(self, now: float | None = None) -> list[dict[str, Any]]:
        """Publishes the merged seconds that are complete (or waited long enough); returns them."""
        now = self.clock() if now is None else now
        if self.origin is None:
            if not self.starts:
                return []
            earliest = min(self.starts.values())
            if any(w not in self.starts for w in self.running) and now < earliest + 1 + LATE_S:
                return []  # a worker that has not sent yet may have started earlier
            self.origin = earliest
        out = []
        last = max((self.last_t[w] + self._offset(w) for w in self.waiting if self.waiting[w]), default=-1)
        while self.published <= last and self._ready(self.published, now):
            slot = self.published
            parts = []
            for w, points in self.waiting.items():
                point = points.pop(slot - self._offset(w), None)
                if point is not None:
                    parts.append(point)
            out.append(merge_seconds(slot, self.origin + slot, parts))
            self.published += 1
        self.unread.extend(out)
        return out

    def read(self, cursor: int) -> dict[str, Any]:
        """As `Run.live(cursor)`: the merged seconds from `cursor` on and the merged totals."""
        self.flush()
        if self._totals_stale:
            self.totals = merge_totals(list(self.worker_totals.values()))
            self._totals_stale = False
        first = self.published - len(self.unread)  # the cursor of unread[0]
        self.unread = self.unread[max(0, cursor - first) :]
        return {"cursor": self.published, "timeseries": list(self.unread), "totals": self.totals}

    def finish(self) -> list[dict[str, Any]]:
        """Everything still waiting, published (the run is over)."""
        self.running.clear()
        return self.flush(now=math.inf)

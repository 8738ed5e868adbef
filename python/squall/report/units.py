"""Number formats shared by the reports. The engine measures in microseconds."""

from __future__ import annotations

import sys
from typing import Any

PERCENTILE_KEYS = ["50", "66", "75", "80", "90", "95", "98", "99", "99.9", "99.99", "100"]


def reported_percentiles() -> list[tuple[str, float]]:
    """(column, percent) of each percentile Locust's console table and CSV files report: its
    `locust.stats.PERCENTILES_TO_REPORT` (fractions), which a locustfile may set, read when they are
    written, as Locust reads it; its 11 (PERCENTILE_KEYS) where no locustfile runs."""
    stats = sys.modules.get("squall.stats")  # (loaded with the locustfile's API: not imported here)
    fractions = getattr(stats, "PERCENTILES_TO_REPORT", None)
    if stats is None or fractions is None:
        return [(f"{k}%", float(k)) for k in PERCENTILE_KEYS]
    fractions = [float(p) for p in fractions]  # (a whole 1 too)
    labels: list[str] = stats.get_readable_percentiles(fractions)
    return [(label, round(100 * p, 6)) for label, p in zip(labels, fractions)]


def percentiles_us(entry: dict[str, Any], percents: list[float]) -> list[float] | None:
    """An entry's (an endpoint's, a second's, the aggregate's) response times at `percents`, in
    microseconds: those the engine reports from its `percentiles_us`, any other from its serialized HDR
    histogram, exact; None when nothing was timed. A percentile neither has (a live row, without a
    histogram): its `spectrum`'s next point above."""
    pct = entry.get("percentiles_us")
    if not isinstance(pct, dict) or not pct:
        return None
    keys = [f"{p:g}" for p in percents]
    missing = [p for p, k in zip(percents, keys) if k not in pct]
    found: dict[float, float] = {}
    if missing and isinstance(entry.get("histogram"), str) and entry["histogram"]:
        from squall import _engine  # (the compiled engine only when a histogram is read: start-up)

        found = dict(zip(missing, map(float, _engine.histogram_percentiles(entry["histogram"], missing))))
    elif missing:
        spectrum = entry.get("spectrum") or []
        for p in missing:
            found[p] = next((float(v) for q, v in spectrum if q >= p), float(entry.get("max_us") or 0))
    return [float(pct[k]) if k in pct else found[p] for p, k in zip(percents, keys)]


def ms(us: float) -> str:
    """Microseconds as milliseconds, with the precision the size deserves."""
    v = us / 1000.0
    if v < 100:
        return f"{v:.2f}"
    if v < 1000:
        return f"{v:.1f}"
    return f"{v:.0f}"


def ms_exact(us: float) -> str:
    """Microseconds as milliseconds to the microsecond, trailing zeros dropped (for CSV)."""
    return f"{us / 1000.0:.3f}".rstrip("0").rstrip(".")


def size(n: float) -> str:
    """Bytes in B, KB, MB or GB (powers of 1000)."""
    if n < 1000:
        return f"{n:.0f} B"
    for unit in ("KB", "MB"):
        n /= 1000.0
        if n < 1000:
            return f"{n:.2f} {unit}"
    return f"{n / 1000.0:.2f} GB"

"""The time a result's totals cover, over which their rates are taken."""

from __future__ import annotations

from typing import Any


def reset_s(result: dict[str, Any]) -> float:
    """When a result's totals were last reset, in seconds from its start (`reset_s`: Locust's
    --reset-stats, the dashboard's Reset, `stats.reset_all()`); 0 without a reset."""
    reset = result.get("reset_s")
    return float(reset) if isinstance(reset, (int, float)) and not isinstance(reset, bool) else 0.0


def counted_s(result: dict[str, Any]) -> float:
    """The seconds a result's totals (aggregate, endpoints, errors) count: its duration, less what came
    before their last reset, as Locust takes an entry's rates from its reset."""
    return max(float(result.get("duration_s") or 0.0) - reset_s(result), 0.0)


def first_counted_second(result: dict[str, Any]) -> int:
    """The first second of the result's time series its totals count (0 without a reset): a reset takes
    effect at the start of the second after the one it was asked in (the engine's recorders and live
    totals alike), so that the totals are the sum of the seconds from there on, exactly; a result made
    before that second came counts from the moment asked, and from the second it fell in here."""
    return int(max(reset_s(result), 0.0))

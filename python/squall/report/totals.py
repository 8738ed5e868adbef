"""The time a result's totals cover, over which their rates are taken."""

from __future__ import annotations

from typing import Any


def counted_s(result: dict[str, Any]) -> float:
    """The seconds a result's totals (aggregate, endpoints, errors) count: its duration, less what came
    before their last reset (`reset_s`: Locust's --reset-stats, the dashboard's Reset, `stats.reset_all()`),
    as Locust takes an entry's rates from its reset. A result without a reset: its duration."""
    duration = float(result.get("duration_s") or 0.0)
    reset = result.get("reset_s")
    if isinstance(reset, (int, float)) and not isinstance(reset, bool):
        return max(duration - float(reset), 0.0)
    return duration


def first_counted_second(result: dict[str, Any]) -> int:
    """The first second of the result's time series its totals count (0 without a reset): the one its
    reset fell in, as the live view counts from the second in progress at a reset. Per-second counts
    from there on hold slightly more than the totals, by what that second had before the reset."""
    reset = result.get("reset_s")
    if isinstance(reset, (int, float)) and not isinstance(reset, bool) and reset > 0:
        return int(reset)
    return 0

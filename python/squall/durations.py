"""Durations as users write them: `30`, `30s`, `2m`, `1h30m`, `1.5s`, `250ms`."""

from __future__ import annotations

import re

_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_UNIT = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}


def parse_duration(text: str, zero: bool = False) -> float:
    """Seconds in `text`; ValueError with a readable message when it is not a duration (or is none at all,
    unless `zero` allows it: a grace of 0 s)."""
    s = text.strip().lower()
    if re.fullmatch(r"\d+(\.\d+)?", s):
        seconds = float(s)
    else:
        pos, seconds = 0, 0.0
        for m in _PART.finditer(s):
            if m.start() != pos:
                break
            seconds += float(m.group(1)) * _UNIT[m.group(2)]
            pos = m.end()
        if pos != len(s) or not s:
            raise ValueError(f"invalid duration '{text}' (use e.g. 30s, 2m, 1h30m)")
    if seconds < 0 or (seconds == 0 and not zero):
        raise ValueError(f"invalid duration '{text}': must be more than zero")
    return seconds


def format_duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f}s"
    m, s = divmod(round(seconds), 60)
    h, m = divmod(m, 60)
    return f"{h}h{m:02d}m{s:02d}s" if h else f"{m}m{s:02d}s"

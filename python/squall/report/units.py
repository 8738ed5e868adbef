"""Number formats shared by the reports. The engine measures in microseconds."""

from __future__ import annotations

PERCENTILE_KEYS = ["50", "66", "75", "80", "90", "95", "98", "99", "99.9", "99.99", "100"]


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

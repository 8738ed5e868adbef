"""Number formats shared by the reports. The engine measures in microseconds."""

PERCENTILE_KEYS = ["50", "66", "75", "80", "90", "95", "98", "99", "99.9", "99.99", "100"]


def ms(us) -> str:
    """Microseconds as milliseconds, with the precision the size deserves."""
    v = us / 1000.0
    if v < 100:
        return f"{v:.2f}"
    if v < 1000:
        return f"{v:.1f}"
    return f"{v:.0f}"


def ms_exact(us) -> str:
    """Microseconds as milliseconds to the microsecond, trailing zeros dropped (for CSV)."""
    return f"{us / 1000.0:.3f}".rstrip("0").rstrip(".")


def size(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.2f} {unit}"
        n /= 1000.0

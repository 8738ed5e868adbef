"""The host's CPU and memory (psutil), sampled beside the targets."""

from __future__ import annotations

from squall.monitor.procfs import Values, _ProcTable, _Target


class _Host(_Target):
    label = "host"

    def __init__(self) -> None:
        import psutil  # type: ignore[import-untyped]

        self.psutil = psutil
        self.cpus = int(psutil.cpu_count() or 1)
        self.prev: tuple[float, float] | None = None

    def _times(self) -> tuple[float, float]:
        """(busy, total) CPU seconds of all cores since boot, as psutil.cpu_percent counts them."""
        t = self.psutil.cpu_times()
        total = float(sum(t)) - float(getattr(t, "guest", 0.0)) - float(getattr(t, "guest_nice", 0.0))
        idle = float(t.idle) + float(getattr(t, "iowait", 0.0))
        return total - idle, total

    def prime(self, table: _ProcTable | None, boot: float) -> None:
        self.prev = self._times()

    def sample(self, table: _ProcTable | None, boot_prev: float, dt: float) -> Values:
        busy, total = self._times()
        cpu = None
        if self.prev is not None and total > self.prev[1]:
            cpu = round(100.0 * self.cpus * (busy - self.prev[0]) / (total - self.prev[1]), 1)
        self.prev = busy, total
        mem = self.psutil.virtual_memory()
        return {
            "cpu_percent": cpu,
            "mem_used_bytes": int(mem.total) - int(mem.available),
            "mem_total_bytes": int(mem.total),
        }


# --- cgroups and containers ----------------------------------------------------------------------

"""The live progress line on a terminal: where the run is, its current rate, its errors."""

from __future__ import annotations

import sys
import time
from typing import Any, Protocol, TextIO

from squall.durations import format_duration


class Shown(Protocol):
    """What a line shows: the engine run's Progress, or a distributed run's workers' added up
    (squall.distributed.driver.ClusterProgress)."""

    @property
    def elapsed(self) -> float: ...
    @property
    def users(self) -> int: ...
    @property
    def completed(self) -> int: ...
    @property
    def failed(self) -> int: ...
    @property
    def finished(self) -> bool: ...
    @property
    def phase(self) -> str: ...
    @property
    def connected(self) -> int: ...
    @property
    def sent(self) -> int: ...
    @property
    def published(self) -> int: ...
    @property
    def mqtt_failed(self) -> int: ...
    @property
    def delivered(self) -> int: ...


def page_fields(p: Shown | None, kind: str) -> dict[str, Any]:
    """What the dashboard shows of a bench or MQTT run beside the engine's stream (`kind`: the page's):
    its users, and for MQTT the counts of connections and messages; nothing before any progress."""
    if p is None:
        return {}
    fields: dict[str, Any] = {"users": p.users}
    if kind == "mqtt":
        fields["mqtt"] = {
            "connected": p.connected,
            "sent": p.sent,
            "published": p.published,
            "delivered": p.delivered,
            "failed": p.mqtt_failed,
        }
    return fields


class ProgressLine:
    """`squall bench`'s line: requests done (or time passed) of the run's total, rate, errors."""

    def __init__(self, config: dict[str, Any], stream: TextIO = sys.stderr) -> None:
        self.total: int | None = config.get("requests")
        self.duration: float | None = config.get("duration")
        self.stream = stream
        self.last = (time.monotonic(), 0)
        self.rate = 0.0

    def show(self, progress: Shown) -> None:
        self.update(progress.elapsed, progress.completed, progress.failed)

    def update(self, elapsed: float, completed: int, failed: int) -> None:
        now = time.monotonic()
        t0, c0 = self.last
        if now - t0 >= 1.0:  # a one-second window keeps the rate readable
            self.rate = (completed - c0) / (now - t0)
            self.last = (now, completed)
        if self.duration:
            where = f"{format_duration(elapsed)} / {format_duration(self.duration)}"
            frac = elapsed / self.duration
        else:
            where = f"{completed:,} / {self.total:,}"
            frac = completed / self.total if self.total else 0
        filled = int(max(0.0, min(1.0, frac)) * 20)
        bar = "#" * filled + "." * (20 - filled)
        self.stream.write(
            f"\r\x1b[K  [{bar}] {where}  {completed:,} requests  {self.rate:,.0f} req/s  {failed:,} errors"
        )
        self.stream.flush()

    def clear(self) -> None:
        self.stream.write("\r\x1b[K")
        self.stream.flush()


class MqttProgressLine(ProgressLine):
    """The same line for `squall mqtt`: connections, then messages published and delivered."""

    def __init__(self, config: dict[str, Any], stream: TextIO = sys.stderr) -> None:
        super().__init__(
            {"duration": config["duration"], "requests": (config["messages"] or 0) * config["clients"] or None}, stream
        )
        self.clients = config["clients"]
        self.verify = config["verify"] or config["subscribe_only"]

    def show(self, progress: Shown) -> None:
        p = progress
        self.update_mqtt(p.elapsed, p.phase, p.connected, p.sent, p.published, p.mqtt_failed, p.delivered, p.finished)

    def update_mqtt(
        self,
        elapsed: float,
        phase: str,
        connected: int,
        sent: int,
        published: int,
        failed: int,
        delivered: int,
        finished: bool,
    ) -> None:
        if phase == "connecting":
            self.stream.write(f"\r\x1b[K  connecting: {connected:,} / {self.clients:,} clients")
            self.stream.flush()
            return
        count = delivered if self.total is None and self.verify and not published else published
        now = time.monotonic()
        t0, c0 = self.last
        if now - t0 >= 1.0:
            self.rate = (count - c0) / (now - t0)
            self.last = (now, count)
        extra = f"  {delivered:,} delivered" if self.verify else ""
        self.stream.write(
            f"\r\x1b[K  {phase}: {format_duration(elapsed)}  {connected:,} connected  "
            f"{published:,} published  {self.rate:,.0f} msg/s  {failed:,} failed{extra}"
        )
        self.stream.flush()

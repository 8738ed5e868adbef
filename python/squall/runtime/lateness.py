"""When a paced run's late sends are worth a warning that the generator may be the limit.

A send is late when it went out more than 10 ms after its intended time (the engine's `late`, per
second in the stream's `schedule`). A paced run counts latency from the intended time, so a late send
carries the generator's lag in its latency. A few late sends are normal: an MQTT run of 50 clients at
20 msg/s for 15 s on a 2-core host shared with other work had 24 of its 15,000 sends late, all in the
first second (2.4% of its ~1,000 sends, 0.16% of the run's); a banner on that is a false alarm. So the
rule asks that lateness be either

- **sustained**: more than 1% of the sends late in each of at least 3 seconds in a row (and at least
  10 late sends in them). Those seconds' p99 latency is then the generator's lag, not the target's
  answer; one bad second (a start-up burst, the host's scheduler taking the core away once) is not
  sustained. Or
- **material**: more than 1% of all the run's sends late (and at least 10): the run's p99 then includes
  the generator's lag. A share of the whole run, so judged when the run ends: judged on the run so far,
  one bad second early on is a large share of few sends, and a banner would come and go (on this host,
  with a compiler taking a core, one second's 69 late sends were 1.2% of the run's first 5,975 sends,
  and the run's 15,000 ended below 1%). While the run goes, the dashboard's banner says sustained lateness (which, once
  seen, stays said).

The warning gives the numbers: late of sent and their share, the worst lag, and the worst streak of
seconds above 1% (its seconds, late of sent). The result's `generator.lateness` holds the same numbers
whether or not they warn, so that a page can say why it does not warn (web/README.md).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable

from squall.report.units import ms

LATE_AFTER_MS = 10  # the engine's `late`: sent more than this after the intended time
LATE_SHARE = 0.01  # more than this share late: in a second (sustained) or over the run (material)
LATE_MIN = 10  # and at least this many late sends
SUSTAINED_FOR = 3  # seconds in a row


@dataclass
class Streak:
    """Seconds in a row each with more than LATE_SHARE of its sends late."""

    first: int
    last: int
    sent: int
    late: int

    @property
    def seconds(self) -> int:
        return self.last - self.first + 1


def percent(share: float) -> str:
    """A share as a percentage with two significant figures below 1% (0.16%), one decimal above (8.3%)."""
    v = 100.0 * share
    return f"{v:.2f}%" if v < 1 else f"{v:.1f}%"


class Lateness:
    """A paced run's sends, second by second (`add`), judged by the module's rule."""

    def __init__(self) -> None:
        self.sent = 0
        self.late = 0
        self.max_lag_us = 0
        self.ended = False  # the run has ended: its share is judged (material)
        self.current: Streak | None = None
        self.worst: Streak | None = None  # of the streaks that were sustained, the one with most late sends

    def add(self, t: int, sent: int, late: int, max_lag_us: int = 0) -> None:
        """Second `t`'s paced sends: how many, how many late, the most late one's lag."""
        if sent <= 0:
            return
        self.sent += sent
        self.late += late
        self.max_lag_us = max(self.max_lag_us, max_lag_us)
        if late <= LATE_SHARE * sent:
            self.current = None
            return
        c = self.current
        if c is not None and c.last == t - 1:
            c.last, c.sent, c.late = t, c.sent + sent, c.late + late
        else:
            c = self.current = Streak(t, t, sent, late)
        worse = self.worst is None or self.worst.first == c.first or c.late > self.worst.late
        if c.seconds >= SUSTAINED_FOR and c.late >= LATE_MIN and worse:
            self.worst = dataclasses.replace(c)  # the streak under way, or one with more late sends

    def end(self) -> None:
        self.ended = True

    @property
    def sustained(self) -> bool:
        return self.worst is not None

    @property
    def material(self) -> bool:
        return self.ended and self.late >= LATE_MIN and self.late > LATE_SHARE * self.sent

    def warning(self, when: Callable[[int, int], str], why: str) -> str | None:
        """The warning's line (None: no warning); `when(first, last)` words a span of seconds, `why`
        ends the line ("; ...")."""
        if not (self.sustained or self.material):
            return None
        rule = f"{LATE_SHARE:.0%}"
        text = (
            f"sends fell behind the schedule: {self.late:,} of {self.sent:,} late (>{LATE_AFTER_MS} ms), "
            f"{percent(self.late / self.sent)} of the run's{f' (more than {rule})' if self.material else ''}, "
            f"up to {ms(self.max_lag_us)} ms behind"
        )
        if self.worst is not None:
            s = self.worst
            text += f"; more than {rule} every second {when(s.first, s.last)}: {s.late:,} of {s.sent:,}"
        return text + why

    def to_json(self) -> dict[str, Any] | None:
        """The `generator.lateness` section (None without paced sends)."""
        if not self.sent:
            return None
        s = self.worst
        return {
            "late_after_ms": LATE_AFTER_MS,
            "sent": self.sent,
            "late": self.late,
            "share": round(self.late / self.sent, 6),
            "max_lag_us": self.max_lag_us,
            "streak": None if s is None else {"first": s.first, "last": s.last, "sent": s.sent, "late": s.late},
            "sustained": self.sustained,
            "material": self.material,
            "judged": "run" if self.ended else "so far",  # material: only once the run has ended
            "rule": {"share": LATE_SHARE, "min_late": LATE_MIN, "sustained_s": SUSTAINED_FOR},
        }

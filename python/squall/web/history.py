"""The run's seconds as the dashboard keeps them, for a page that opens late, the report and the result
downloaded during the run: each second as the JSON text the page reads, a minute of them compressed
together once the minute is complete. Never as Python objects: those cost four times the text.

Measured on `make soak`'s `squall -f` (1,801 seconds of 4 endpoints, tests/locustfiles/soak_mix.py): a
second is 10.7 kB as Python dicts and 2.7 kB as JSON text, a third of which is the second's HDR
histograms (base64 of deflated data: incompressible), kept in the engine's stream for merging
processes' seconds and never read by the page. Without them (`page_text`) a second is 1.8 kB of text
and 0.37 kB once compressed with its minute: a day's seconds hold 32 MB where the dicts held 920 MB.
Encoding costs the thread that publishes about 0.2 ms a second; reading the 1,801 back, 22 ms (a page
that opens late asks for all of them once, then for the new second each time). The text is spliced
into the answers as it is (`json_array`), so that an answer is never built as objects either.

It imports page.py (JSON as the page reads it) and nothing else of squall; server.py's store uses it."""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable, Iterator
from typing import Any

from squall.web.page import to_json

MINUTE = 60  # seconds compressed together: zlib finds the repeats between seconds (names, keys)
LEVEL = 6  # zlib's default: level 9 saves 2% more here for twice the time


def page_text(second: dict[str, Any]) -> str:
    """A second as the page reads it, as JSON text: without its HDR histograms (its own and each
    endpoint's), which only merges read (web/src/types.ts `Point`: optional)."""
    slim = {k: v for k, v in second.items() if k != "histogram"}
    if isinstance(slim.get("endpoints"), list):
        slim["endpoints"] = [
            {k: v for k, v in e.items() if k != "histogram"} if isinstance(e, dict) else e for e in slim["endpoints"]
        ]
    return to_json(slim)


class Seconds:
    """The seconds so far: `extend` takes each second once (`encode` makes it JSON text, `page_text` by
    default); `reader` hands out what a client has not seen, safely read outside the caller's lock."""

    def __init__(self, encode: Callable[[dict[str, Any]], str] = page_text) -> None:
        self._encode = encode
        self._minutes: list[bytes] = []  # full minutes, compressed: MINUTE texts joined by "\n"
        self._open: list[str] = []  # the minute being filled
        self.last: dict[str, Any] | None = None  # the latest second, as given (what Locust's /stats reads)
        self.first_unix: float | None = None  # when the first second began

    def __len__(self) -> int:
        return len(self._minutes) * MINUTE + len(self._open)

    def extend(self, seconds: list[dict[str, Any]]) -> None:
        for s in seconds:
            # A JSON text holds no raw newline (json.dumps escapes one inside a string): "\n" splits them.
            self._open.append(self._encode(s))
            if len(self._open) == MINUTE:
                self._minutes.append(zlib.compress("\n".join(self._open).encode(), LEVEL))
                self._open = []
        if seconds:
            self.last = seconds[-1]
            if self.first_unix is None:
                unix = seconds[0].get("unix")
                self.first_unix = float(unix) if isinstance(unix, (int, float)) else None

    def reader(self, start: int) -> Reader:
        """The seconds from `start` on, as they are now. Cheap (a copy of at most a minute's references):
        take it under the lock that guards `extend`, read it after."""
        return Reader(max(0, start), list(self._minutes), list(self._open))


class Reader:
    """A snapshot of `Seconds` from a second on; the compressed minutes are immutable bytes, shared."""

    def __init__(self, start: int, minutes: list[bytes], open_minute: list[str]) -> None:
        self.start = start
        self.minutes = minutes
        self.open_minute = open_minute

    def texts(self) -> Iterator[str]:
        first = self.start // MINUTE
        skip = self.start - first * MINUTE
        for i in range(first, len(self.minutes)):
            texts = zlib.decompress(self.minutes[i]).decode().split("\n")
            yield from texts[skip:]
            skip = 0
        if first <= len(self.minutes):
            yield from self.open_minute[skip if first == len(self.minutes) else 0 :]

    def json_array(self) -> str:
        """The seconds as a JSON array's text."""
        return "[" + ",".join(self.texts()) + "]"

    def decoded(self) -> list[dict[str, Any]]:
        """The seconds as objects (for a caller that computes with a few of them)."""
        return [json.loads(t) for t in self.texts()]

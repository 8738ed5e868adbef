"""Locust's request statistics (`environment.stats`, `runner.stats`, `locust.stats`): `RequestStats`,
`StatsEntry` and `StatsError`, with Locust's names, units and edge cases, read from squall's engine.

Policy:
- Views, not bookkeeping: squall records every request in its engine, so these objects keep no count
  of their own; a read takes the engine's numbers, and one reading serves every read for `CACHE_S`.
- Where the numbers come from, by phase: before the test, nothing (zeros, as Locust's fresh stats).
  During the test, the engine's live totals: they hold the seconds the engine has published, so they
  lag the requests by up to about a second (Locust's counts are immediate). In `test_stop` the users
  are done: the first read lets the engine publish what they recorded (waiting for the end of the
  current second, about 1.1 s at most, only when something is unpublished), so the numbers are the
  run's final ones. In `quitting` (and after), the run's result document.
- Units are Locust's: times in milliseconds as floats (from the engine's microseconds), timestamps
  in Unix seconds, sizes in bytes. Empty entries answer as Locust's do (`min_response_time` None,
  `median_response_time` 0, `fail_ratio` 0.0, or 1.0 with failures but no requests).
- Times are HDR's (3 significant digits: within 0.1%, exact below 2.048 ms), percentiles at rank
  ceil(p x N) and never outside [min, max]. Locust instead rounds each time to 2 significant digits
  (147 ms counts as 150) and takes rank floor(p x N) + 1. Exact at any percentile once the run has
  ended (the result's histograms); during the run and in `test_stop`, exact at the percentiles Locust
  reports (50, 66, 75, 80, 90, 95, 98, 99, 99.9, 99.99, 100), else the next point of the engine's
  percentile spectrum above (never below the exact value): the live totals carry no histogram.
  `response_times` (Locust's rounded distribution) comes from the histogram after the run, from that
  spectrum during it. `get_current_response_time_percentile` (a sliding 10 s window) is not kept.
- Per-second counts (`num_reqs_per_sec`, `current_rps`) come from the engine's per-second series;
  `last_request_timestamp` is the end of the entry's last second with requests (the engine keeps
  counts per second, not each request's time), so `total_rps` of a run shorter than a second is low.
- `StatsError.error` is Locust's text for the failure, a string as in Locust's distributed mode:
  `HTTPError('500 Server Error: ... for url: NAME')`, `CatchResponseError('...')` (squall.report.
  locust_errors); timeouts and refused connections keep the engine's words.
- `reset_all()` resets the engine's totals (Locust's `--reset-stats`, the dashboard's Reset): they are
  empty at once and count from the start of the next second, in `quitting` and in the run's result and
  files too (so that they are the sum of the seconds from there on: Locust counts from the call).
"""

from __future__ import annotations

import sys
import time
from collections import defaultdict
from typing import TYPE_CHECKING, Any, Callable, TypedDict, cast

from squall import thresholds
from squall.report import locust_errors

if TYPE_CHECKING:
    from collections.abc import Iterable

    from squall.env import Environment
    from squall.runners import Runner
    from squall.runtime.hub import Hub

# A reading of the engine serves every read for this long: a listener reading ten fields asks once.
# One `ScriptEngine.live` call costs 0.5 ms with 3 endpoints, 1.8 ms with 20 (measured: 2,000 recorded
# requests, then 200 calls), so a task reading the stats in a loop costs at most ~2% of a core.
CACHE_S = 0.1

STATS_NAME_WIDTH = 80
STATS_TYPE_WIDTH = 8
CONSOLE_STATS_INTERVAL_SEC = 2
HISTORY_STATS_INTERVAL_SEC = 5
CURRENT_RESPONSE_TIME_PERCENTILE_WINDOW = 10
PERCENTILES_TO_REPORT = [0.50, 0.66, 0.75, 0.80, 0.90, 0.95, 0.98, 0.99, 0.999, 0.9999, 1.0]
PERCENTILES_TO_STATISTICS = [0.95, 0.99]
PERCENTILES_TO_CHART = [0.5, 0.95]

_TOTAL = ("Aggregated", "")  # the key of the total's per-second counts (no entry has an empty method)
Key = tuple[str, str]  # (name, method), as Locust keys its entries
Row = dict[str, Any]  # an endpoint of the engine's live totals or of the result


class StatsEntryDict(TypedDict):
    name: str
    method: str
    last_request_timestamp: float | None
    start_time: float
    num_requests: int
    num_none_requests: int
    num_failures: int
    total_response_time: float
    max_response_time: float
    min_response_time: float | None
    total_content_length: int
    response_times: dict[int, int]
    num_reqs_per_sec: dict[int, int]
    num_fail_per_sec: dict[int, int]


class StatsErrorDict(TypedDict):
    name: str
    method: str
    error: str
    occurrences: int
    first_seen: float | None
    last_seen: float | None


def bucket_response_time(response_time: float) -> int:
    """Locust's rounding of a response time (ms) to about 2 significant digits: 147 -> 150."""
    from squall.report.locust_json import bucket_response_time as bucket  # the reports when used: start-up

    return bucket(response_time)


def calculate_response_time_percentile(response_times: dict[int, int], num_requests: int, percent: float) -> int:
    """Locust's percentile of a `response_times` dict (rounded ms -> count), `percent` from 0 to 1."""
    num_of_request = int(num_requests * percent)
    processed_count = 0
    for response_time in sorted(response_times, reverse=True):
        processed_count += response_times[response_time]
        if num_requests - processed_count <= num_of_request:
            return response_time
    return 0


def get_readable_percentiles(percentile_list: list[float]) -> list[str]:
    """0.95 -> "95%", 0.999 -> "99.9%" (Locust's column headers)."""
    return [
        f"{int(p * 100) if (p * 100).is_integer() else round(100 * p, 6)}%"  # as Locust writes them
        for p in percentile_list
    ]


def _is_fraction(p: object, inclusive: bool) -> bool:
    try:
        value = float(p)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False
    return 0 <= value <= 1 if inclusive else 0 < value < 1


def validate_stats_configuration() -> None:
    """Locust's check of the percentile settings a locustfile may patch, before the run: a message and
    exit 1 for PERCENTILES_TO_CHART (at most 6) and PERCENTILES_TO_STATISTICS outside (0, 1), in
    Locust's words. squall checks PERCENTILES_TO_REPORT too (numbers in [0, 1], at least one: its
    tables and CSV columns; Locust writes them unchecked)."""
    if len(PERCENTILES_TO_CHART) > 6:
        sys.stderr.write("stats.PERCENTILES_TO_CHART parameter should be a maximum of 6 parameters \n")
        sys.exit(1)
    if not all(_is_fraction(p, False) for p in PERCENTILES_TO_CHART):
        sys.stderr.write(
            "stats.PERCENTILES_TO_CHART parameter need to be float and value between. 0 < percentile < 1 Eg 0.95\n"
        )
        sys.exit(1)
    if not all(_is_fraction(p, False) for p in PERCENTILES_TO_STATISTICS):
        sys.stderr.write(
            "stats.PERCENTILES_TO_STATISTICS parameter need to be float and value between. 0 < percentile < 1 Eg 0.95\n"
        )
        sys.exit(1)
    if not PERCENTILES_TO_REPORT or not all(_is_fraction(p, True) for p in PERCENTILES_TO_REPORT):
        sys.stderr.write(
            "stats.PERCENTILES_TO_REPORT parameter need to be a list of floats between 0 and 1, Eg [0.5, 0.95, 1.0]\n"
        )
        sys.exit(1)


def proper_round(val: float, digits: int = 0) -> float:
    """Locust's rounding of halves upwards (`locust.util.rounding.proper_round`)."""
    float_val = float(val)
    return float(round(float_val + 10 ** (-len(str(float_val)) - 1), digits))


def avg(values: list[float]) -> float:
    return sum(values, 0.0) / max(len(values), 1)


class FiredRequests:
    """`events.request`'s recorder while a run is on (squall.event.RequestHook): a request a locustfile
    fires itself goes into the run's engine as Locust's stats log it: under its `request_type` and
    `name`, with its `response_time` (ms; None, which Locust counts as a request without a time, is
    recorded as 0 ms), its `response_length`, and its `exception` as a failure in Locust's words. The
    engine times it at the fire (its second: when the call ended, as Locust's stats see it). `engine`
    gives the run's engine now (a test started from the dashboard gets a new one)."""

    def __init__(self, engine: Callable[[], Any]) -> None:
        self.engine = engine

    def __call__(
        self,
        request_type: str,
        name: str,
        response_time: float | None,
        response_length: int | None = 0,
        exception: BaseException | str | None = None,
        **_context: Any,
    ) -> None:
        elapsed_us = 0 if response_time is None else max(0, round(float(response_time) * 1000))
        failure = None if exception is None else locust_errors.error_text(exception)
        self.engine().record(str(request_type), str(name), elapsed_us, 0, int(response_length or 0), failure)


class _View:
    """One reading of the numbers: the endpoints' rows by key, the aggregate's, the errors."""

    def __init__(
        self,
        rows: dict[Key, Row] | None = None,
        total: Row | None = None,
        errors: list[dict[str, Any]] | None = None,
        exact: bool = False,
        start_unix: float | None = None,
    ) -> None:
        self.rows = rows or {}
        self.total = total
        self.errors = errors or []
        self.exact = exact  # rows carry their histograms (the result): exact at any percentile
        self.start_unix = start_unix  # the engine's start: its error times count from there
        self.percentiles: dict[tuple[Key, float], float] = {}  # computed from histograms, kept


_EMPTY = _View()


class _Series:
    """Requests and failures per Unix second of each entry and of the total, from the engine's
    per-second stream; each second of the run goes to the clock second holding most of it (as
    `squall.report.locust_json` does), so the counts add up to the totals."""

    def __init__(self) -> None:
        self.reqs: dict[Key, defaultdict[int, int]] = {}
        self.fails: dict[Key, defaultdict[int, int]] = {}
        self.first: dict[Key, float] = {}  # start of the first second with requests
        self.last: dict[Key, float] = {}  # end of the last second with requests

    def clear(self) -> None:
        """A reset: the counts so far are forgotten."""
        self.reqs, self.fails, self.first, self.last = {}, {}, {}, {}

    def add(self, second: dict[str, Any], counted: bool, end: float | None = None) -> None:
        """One second of the stream; `counted` False: before a reset (not counted here)."""
        if not counted:
            return
        unix = float(second["unix"])
        clock = round(unix)
        stop = unix + 1.0 if end is None else max(unix, min(unix + 1.0, end))
        rows = [(_TOTAL, second.get("requests", 0), second.get("failures", 0))]
        rows += [((e["name"], e["method"]), e["requests"], e["failures"]) for e in second.get("endpoints", [])]
        for key, n, f in rows:
            if n:
                self.reqs.setdefault(key, defaultdict(int))[clock] += n
                self.first.setdefault(key, unix)
                self.last[key] = stop
            if f:
                self.fails.setdefault(key, defaultdict(int))[clock] += f


class RequestStats:
    """Locust's `RequestStats`, reading squall's engine (see the module's policy). Made by the
    environment; `RequestStats()` alone is empty."""

    def __init__(self, use_response_times_cache: bool = True, environment: Environment | None = None) -> None:
        self.use_response_times_cache = use_response_times_cache
        self._env = environment
        self.total = StatsEntry(self, "Aggregated", "", use_response_times_cache)
        self._watching_stop = False  # reset_all() asked for a last reading at test_stop
        self.begin_test()

    def begin_test(self) -> None:
        """Empty, reading the engine from its start: made so, and again when the process starts another
        test (the dashboard's New; Locust's `runner.start()` clears its stats), on the new engine."""
        self.history: list[dict[str, Any]] = []
        self._entries: dict[Key, StatsEntry] = _EntriesDict(self)
        self._errors: dict[str, StatsError] = {}
        self._errors_of: _View | None = None  # the reading `_errors` was made from
        self._created = time.time()
        self._reset_unix: float | None = None  # when reset_all() last ran
        self._live = _EMPTY
        self._taken = -CACHE_S  # monotonic time of the live reading
        self._cursor = 0  # seconds of the stream read so far
        self._start_unix: float | None = None  # the engine's start, from its first second
        self._counted_from = 0  # the first second counted in the per-second series (after a reset)
        self._series = _Series()
        self._settled = False  # test_stop: the engine has published everything the users recorded
        self._final: _View | None = None  # the result's numbers, once the run has ended
        self._emptied = False  # reset after the run

    # Locust's RequestStats surface.

    @property
    def entries(self) -> dict[Key, StatsEntry]:
        """The entries by (name, method): one per endpoint with requests, and those asked for."""
        for key in self._view().rows:
            if key not in self._entries:
                self._entries[key] = StatsEntry(self, key[0], key[1], self.use_response_times_cache)
        return self._entries

    @property
    def errors(self) -> dict[str, StatsError]:
        """The errors by Locust's key (a hash of method, name and error)."""
        view = self._view()
        if self._errors_of is not view:
            start = view.start_unix
            self._errors = {}
            fast = self._env is not None and locust_errors.fast_http(self._env.user_classes)
            for e in view.errors:
                first, last = e.get("first_seen_s"), e.get("last_seen_s")
                first = None if first is None or start is None else start + first
                last = None if last is None or start is None else start + last
                text = locust_errors.csv_text(e, True, fast)  # Locust's words: HTTPError('500 ...')
                key = StatsError.create_key(e["method"], e["name"], text)
                known = self._errors.get(key)  # the same text from two kinds of failure: one error
                if known is None:
                    self._errors[key] = StatsError(e["method"], e["name"], text, e["count"], first, last)
                else:
                    known.occurrences += e["count"]
                    firsts = [t for t in (known.first_seen, first) if t is not None]
                    lasts = [t for t in (known.last_seen, last) if t is not None]
                    known.first_seen, known.last_seen = min(firsts, default=None), max(lasts, default=None)
            self._errors_of = view
        return self._errors

    @property
    def num_requests(self) -> int:
        return self.total.num_requests

    @property
    def num_none_requests(self) -> int:
        return self.total.num_none_requests

    @property
    def num_failures(self) -> int:
        return self.total.num_failures

    @property
    def last_request_timestamp(self) -> float | None:
        return self.total.last_request_timestamp

    @property
    def start_time(self) -> float:
        return self.total.start_time

    def get(self, name: str, method: str) -> StatsEntry:
        """The entry of (name, method); an empty one if it has no requests (as Locust's)."""
        return self.entries[(name, method)]

    def reset_all(self) -> None:
        """Every entry back to zero, errors gone: the engine's live totals start afresh."""
        env = self._env
        self.history = []
        if env is not None and env.result is not None:
            self._emptied = True  # after the run: Locust's stats are zeros then
        elif env is not None and env.hub is not None:
            if not self._watching_stop:
                # At the end of the test the live totals (what came after the reset) are read once
                # more, for `quitting`: the result counts from the start.
                self._watching_stop = True
                env.events.test_stop.add_listener(self._on_test_stop)
            # The engine's reset counts from the start of the next second, which it says: the seconds
            # before it are not counted here either (those published until now are read first).
            self._read(env.hub)
            self._counted_from = env.hub.engine.reset_totals()
            self._taken = -CACHE_S
        self._reset_unix = time.time()
        self._series.clear()

    def _on_test_stop(self, **_kw: Any) -> None:
        self._view()

    def clear_all(self) -> None:
        """reset_all(), and the entries are forgotten."""
        self.reset_all()
        self._entries = _EntriesDict(self)

    def serialize_stats(self) -> list[StatsEntryDict]:
        return [e.serialize() for e in self.entries.values() if e.num_requests or e.num_failures]

    def serialize_errors(self) -> dict[str, StatsErrorDict]:
        return {k: e.serialize() for k, e in self.errors.items()}

    # Reading the engine.

    def _view(self) -> _View:
        env = self._env
        if env is None or self._emptied:
            return _EMPTY
        if env.result is not None:
            if self._final is None:
                self._final = self._final_view(env.result)
            return self._final
        hub = env.hub
        if hub is None:
            return _EMPTY
        stopped = env.runner.state == "stopped" and env.started_at is not None
        if stopped and not self._settled:
            self._settle(hub)
        elif time.monotonic() - self._taken >= CACHE_S:
            self._read(hub)
        return self._live

    def _read(self, hub: Hub) -> None:
        try:
            live = hub.engine.live(self._cursor)
        except RuntimeError:  # the engine has finished; the result is on its way
            return
        for second in live["timeseries"]:
            self._series.add(second, counted=second["t"] >= self._counted_from)
            if self._start_unix is None:
                self._start_unix = float(second["unix"]) - second["t"]
        self._cursor = live["cursor"]
        totals = live["totals"]
        rows = {(e["name"], e["method"]): e for e in totals["endpoints"]}
        self._live = _View(rows, totals["aggregate"], totals["errors"], exact=False, start_unix=self._start_unix)
        self._taken = time.monotonic()

    def _settle(self, hub: Hub) -> None:
        """The users are done: the engine publishes what they recorded at once, the second in progress
        included, and that is read. (Waiting for that second to end instead kept a test_stop listener
        that reads the stats, as --reset-stats's own does, up to a second: 0.92 s measured.)"""
        self._settled = True
        hub.engine.publish_now()
        self._read(hub)

    def _final_view(self, result: dict[str, Any]) -> _View:
        """The result's numbers (after a reset, the result counts from it too, as Locust's stats do)."""
        start = float(result.get("start_unix", 0.0))
        end = start + float(result.get("duration_s", 0.0))
        self._series = _Series()
        for second in result.get("timeseries") or []:
            counted = self._reset_unix is None or int(second.get("t", 0)) >= self._counted_from
            self._series.add(second, counted=counted, end=end)
        rows = {(e["name"], e["method"]): e for e in result["endpoints"] if e["requests"] or e["failures"]}
        return _View(rows, result["aggregate"], result.get("errors") or [], exact=True, start_unix=start)

    def _start(self) -> float:
        """The start of the test (or of the stats, after a reset), in Unix seconds."""
        if self._reset_unix is not None:
            return self._reset_unix
        env = self._env
        if env is not None and env.started_at is not None:
            return time.time() - (time.monotonic() - env.started_at)
        return self._created


class _EntriesDict(dict[Key, "StatsEntry"]):
    """Locust's entries: asking for a missing (name, method) makes an empty entry."""

    def __init__(self, stats: RequestStats) -> None:
        super().__init__()
        self.stats = stats

    def __missing__(self, key: Key) -> StatsEntry:
        entry = StatsEntry(self.stats, key[0], key[1], self.stats.use_response_times_cache)
        self[key] = entry
        return entry


class StatsEntry:
    """One (name, method) of Locust's stats, or the total ("Aggregated"): every field reads the
    engine's numbers (see the module's policy)."""

    def __init__(self, stats: RequestStats, name: str, method: str, use_response_times_cache: bool = False) -> None:
        self.stats = stats
        self.name = name
        self.method = method
        self.use_response_times_cache = use_response_times_cache
        self._is_total = name == _TOTAL[0] and method == _TOTAL[1]

    def _row(self) -> Row | None:
        view = self.stats._view()
        row = view.total if self._is_total else view.rows.get((self.name, self.method))
        return row if row and (row["requests"] or row["failures"]) else None

    @property
    def _key(self) -> Key:
        return _TOTAL if self._is_total else (self.name, self.method)

    # Counts and times.

    @property
    def num_requests(self) -> int:
        row = self._row()
        return int(row["requests"]) if row else 0

    @property
    def num_none_requests(self) -> int:
        return 0  # every squall request has a response time

    @property
    def num_failures(self) -> int:
        row = self._row()
        return int(row["failures"]) if row else 0

    @property
    def total_response_time(self) -> float:
        row = self._row()
        return float(row["mean_us"]) * row["requests"] / 1000 if row else 0.0

    @property
    def min_response_time(self) -> float | None:
        row = self._row()
        return row["min_us"] / 1000 if row and row["requests"] else None

    @property
    def max_response_time(self) -> float:
        row = self._row()
        return row["max_us"] / 1000 if row and row["requests"] else 0

    @property
    def total_content_length(self) -> int:
        row = self._row()
        return int(row["body_bytes"]) if row else 0

    @property
    def response_times(self) -> dict[int, int]:
        """Locust's distribution: rounded response time (ms) -> count."""
        row = self._row()
        if not row or not row["requests"]:
            return defaultdict(int)
        if row.get("histogram"):
            from squall.report.locust_json import response_times  # the reports when used: start-up

            return defaultdict(int, response_times(row["histogram"]))
        return defaultdict(int, _from_spectrum(row))

    @property
    def num_reqs_per_sec(self) -> dict[int, int]:
        self.stats._view()
        return defaultdict(int, self.stats._series.reqs.get(self._key, {}))

    @property
    def num_fail_per_sec(self) -> dict[int, int]:
        self.stats._view()
        return defaultdict(int, self.stats._series.fails.get(self._key, {}))

    @property
    def start_time(self) -> float:
        start = self.stats._start()
        if self._is_total:
            return start
        first = self.stats._series.first.get(self._key) if self._row() else None
        return start if first is None else max(start, first)

    @property
    def last_request_timestamp(self) -> float | None:
        if not self._row():
            return None
        last = self.stats._series.last.get(self._key)
        return last if last is not None else time.time()  # in totals, not yet in a second read

    # Locust's derived numbers, computed as Locust computes them.

    @property
    def fail_ratio(self) -> float:
        try:
            return float(self.num_failures) / self.num_requests
        except ZeroDivisionError:
            return 1.0 if self.num_failures > 0 else 0.0

    @property
    def avg_response_time(self) -> float:
        row = self._row()
        return float(row["mean_us"]) / 1000 if row and row["requests"] else 0.0

    @property
    def median_response_time(self) -> float:
        row = self._row()
        if not row or not row["requests"]:
            return 0
        return self._percentile_ms(row, 0.5)  # within [min, max], as Locust's

    def get_response_time_percentile(self, percent: float) -> float:
        """The response time (ms) below which `percent` (0.0 to 1.0) of the requests finished."""
        row = self._row()
        if not row or not row["requests"]:
            return 0
        return self._percentile_ms(row, percent)

    def get_current_response_time_percentile(self, percent: float) -> float | None:
        """Not kept: the engine's per-second series has exact percentiles per second, not over a
        sliding window."""
        raise NotImplementedError(
            "squall does not keep a sliding window of response times: get_current_response_time_percentile() "
            "is not available (get_response_time_percentile() is exact)"
        )

    def _percentile_ms(self, row: Row, percent: float) -> float:
        view = self.stats._view()
        p = round(min(max(percent, 0.0), 1.0) * 100, 6)
        cached = view.percentiles.get((self._key, p))
        if cached is None:
            value = thresholds.exact_percentile(row, p) if view.exact else thresholds.live_percentile(row, p)
            # As Locust's median: never outside [min, max] (the engine's, HDR's too: within 0.1%).
            value = min(max(value if value is not None else row["max_us"], row["min_us"]), row["max_us"])
            cached = view.percentiles[(self._key, p)] = value / 1000
        return cached

    @property
    def current_rps(self) -> float:
        stats = self.stats
        last = stats.last_request_timestamp
        if last is None:
            return 0
        slice_start = max(int(last) - 12, int(stats.start_time or 0))
        per_sec = self.num_reqs_per_sec
        return avg([per_sec.get(t, 0) for t in range(slice_start, int(last) - 2)])

    @property
    def current_fail_per_sec(self) -> float:
        stats = self.stats
        last = stats.last_request_timestamp
        if last is None:
            return 0
        slice_start = max(int(last) - 12, int(stats.start_time or 0))
        per_sec = self.num_fail_per_sec
        return avg([per_sec.get(t, 0) for t in range(slice_start, int(last) - 2)])

    @property
    def total_rps(self) -> float:
        last, start = self.stats.last_request_timestamp, self.stats.start_time
        if not last or not start:
            return 0.0
        try:
            return self.num_requests / (last - start)
        except ZeroDivisionError:
            return 0.0

    @property
    def total_fail_per_sec(self) -> float:
        last, start = self.stats.last_request_timestamp, self.stats.start_time
        if not last or not start:
            return 0.0
        try:
            return self.num_failures / (last - start)
        except ZeroDivisionError:
            return 0.0

    @property
    def avg_content_length(self) -> float:
        try:
            return self.total_content_length / self.num_requests
        except ZeroDivisionError:
            return 0

    # Locust's forms of an entry.

    def serialize(self) -> StatsEntryDict:
        return cast(StatsEntryDict, {key: getattr(self, key) for key in StatsEntryDict.__annotations__})

    def to_dict(self, escape_string_values: bool = False) -> dict[str, Any]:
        percentiles = {
            f"response_time_percentile_{p}": self.get_response_time_percentile(p) for p in PERCENTILES_TO_STATISTICS
        }
        min_rt = self.min_response_time
        return {
            "method": self.method,
            "name": self.name,
            "num_requests": self.num_requests,
            "num_failures": self.num_failures,
            "min_response_time": 0 if min_rt is None else proper_round(min_rt),
            "max_response_time": proper_round(self.max_response_time),
            "current_rps": self.current_rps,
            "current_fail_per_sec": self.current_fail_per_sec,
            "avg_response_time": self.avg_response_time,
            "median_response_time": self.median_response_time,
            "total_rps": self.total_rps,
            "total_fail_per_sec": self.total_fail_per_sec,
            **percentiles,
            "avg_content_length": self.avg_content_length,
        }

    def to_string(self, current: bool = True) -> str:
        """The entry's line of Locust's stats table (current: the last 10 s' rates)."""
        rps = self.current_rps if current else self.total_rps
        fail_per_sec = self.current_fail_per_sec if current else self.total_fail_per_sec
        name_width = (STATS_NAME_WIDTH - STATS_TYPE_WIDTH) + 4
        return (f"%-{STATS_TYPE_WIDTH}s %-{name_width}s %7d %12s |%7d %7d %7d%7d | %7.2f %11.2f") % (
            (self.method and self.method + " ") or "",
            self.name,
            self.num_requests,
            f"{self.num_failures}({self.fail_ratio * 100:.2f}%)",
            self.avg_response_time,
            self.min_response_time or 0,
            self.max_response_time,
            self.median_response_time or 0,
            rps or 0,
            fail_per_sec or 0,
        )

    def __str__(self) -> str:
        return self.to_string(current=True)

    def percentile(self) -> str:
        """The entry's line of Locust's percentiles table."""
        if not self.num_requests:
            raise ValueError("Can't calculate percentile on url with no successful requests")
        tpl = f"%-{STATS_TYPE_WIDTH}s %-{STATS_NAME_WIDTH}s %8d {' '.join(['%6d'] * len(PERCENTILES_TO_REPORT))}"
        values = tuple(self.get_response_time_percentile(p) for p in PERCENTILES_TO_REPORT)
        return tpl % (self.method or "", self.name, self.num_requests, *values)

    def reset(self) -> None:
        """The engine resets its statistics as a whole: the total's reset is `reset_all()`."""
        if not self._is_total:
            raise NotImplementedError("squall resets all the statistics at once: use environment.stats.reset_all()")
        self.stats.reset_all()


def _from_spectrum(row: Row) -> dict[int, int]:
    """Locust's rounded distribution rebuilt from the engine's percentile spectrum (live totals carry
    no histogram): the requests between two points of the spectrum count at the upper point's value."""
    n = int(row["requests"])
    out: dict[int, int] = {}
    counted = 0
    for q, value in [*(row.get("spectrum") or []), [100.0, row["max_us"]]]:
        upto = min(n, round(q / 100 * n))
        if upto > counted:
            key = bucket_response_time(value / 1000)
            out[key] = out.get(key, 0) + upto - counted
            counted = upto
    return dict(sorted(out.items()))


class StatsError:
    """One kind of error of one (name, method), with its occurrences (Locust's `StatsError`)."""

    def __init__(
        self,
        method: str,
        name: str,
        error: Exception | str | None,
        occurrences: int = 0,
        first_seen: float | None = None,
        last_seen: float | None = None,
    ) -> None:
        self.method = method
        self.name = name
        self.error = error
        self.occurrences = occurrences
        self.first_seen = first_seen
        self.last_seen = last_seen

    @classmethod
    def parse_error(cls, error: Exception | str | None) -> str:
        """The error as text, without the memory address of an object in it."""
        string_error = error if isinstance(error, str) else repr(error)
        target = "object at 0x"
        target_index = string_error.find(target)
        if target_index < 0:
            return string_error
        start = target_index + len(target) - 2
        end = string_error.find(">", start)
        if end < 0:
            return string_error
        return string_error.replace(string_error[start:end], "0x....")

    @classmethod
    def create_key(cls, method: str, name: str, error: Exception | str | None) -> str:
        import hashlib  # (start-up: OpenSSL's 4 ms, for runs that have errors)

        key = f"{method}.{name}.{StatsError.parse_error(error)!r}"
        return hashlib.sha256(key.encode("utf-8")).hexdigest()

    def occurred(self) -> None:
        self.occurrences += 1
        now = time.time()
        if self.first_seen is None:
            self.first_seen = now
        self.last_seen = now

    def to_name(self) -> str:
        error = self.error
        if isinstance(error, str):
            unwrapped = error[len("CatchResponseError(") : -1] if error.startswith("CatchResponseError(") else error
        else:
            unwrapped = repr(error)
        return f"{self.method} {self.name}: {unwrapped}"

    def serialize(self) -> StatsErrorDict:
        return {
            "name": self.name,
            "method": self.method,
            "error": self.parse_error(self.error),
            "occurrences": self.occurrences,
            "first_seen": self.first_seen,
            "last_seen": self.last_seen,
        }

    @classmethod
    def unserialize(cls, data: StatsErrorDict) -> StatsError:
        return cls(
            data["method"],
            data["name"],
            data["error"],
            data["occurrences"],
            data.get("first_seen"),
            data.get("last_seen"),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "name": self.name,
            "error": self.parse_error(self.error),
            "occurrences": self.occurrences,
            "first_seen": self.first_seen,
            "last_seen": self.last_seen,
        }


# Locust's console forms of the stats (its `print_stats` and friends), on stdout.


def get_stats_summary(stats: RequestStats, current: bool = True) -> list[str]:
    name_width = (STATS_NAME_WIDTH - STATS_TYPE_WIDTH) + 4
    header = (f"%-{STATS_TYPE_WIDTH}s %-{name_width}s %7s %12s |%7s %7s %7s%7s | %7s %11s") % (
        "Type",
        "Name",
        "# reqs",
        "# fails",
        "Avg",
        "Min",
        "Max",
        "Med",
        "req/s",
        "failures/s",
    )
    separator = (
        f"{'-' * STATS_TYPE_WIDTH}|{'-' * name_width}|{'-' * 7}|{'-' * 13}|{'-' * 7}|{'-' * 7}|{'-' * 7}|"
        f"{'-' * 7}|{'-' * 8}|{'-' * 11}"
    )
    entries = stats.entries
    lines = [header, separator, *(entries[key].to_string(current) for key in sorted(entries)), separator]
    return [*lines, stats.total.to_string(current)]


def get_percentile_stats_summary(stats: RequestStats) -> list[str]:
    headers = ("Type", "Name", *get_readable_percentiles(PERCENTILES_TO_REPORT), "# reqs")
    row = f"%-{STATS_TYPE_WIDTH}s %-{STATS_NAME_WIDTH}s %8s {' '.join(['%6s'] * len(PERCENTILES_TO_REPORT))}"
    separator = (
        f"{'-' * STATS_TYPE_WIDTH}|{'-' * STATS_NAME_WIDTH}|{'-' * 8}|{('-' * 6 + '|') * len(PERCENTILES_TO_REPORT)}"
    )[:-1]
    lines = ["Response time percentiles (approximated)", row % headers, separator]
    entries = stats.entries
    lines += [entries[key].percentile() for key in sorted(entries) if entries[key].num_requests]
    lines.append(separator)
    if stats.total.num_requests:
        lines.append(stats.total.percentile())
    return lines


def get_error_report_summary(stats: RequestStats) -> list[str]:
    separator = f"{'-' * 18}|{'-' * ((80 + STATS_NAME_WIDTH) - 19)}"
    lines = ["Error report", f"{'# occurrences':18} {'Error':100}", separator]
    lines += [f"{e.occurrences:<18} {e.to_name():<100}" for e in stats.errors.values()]
    return [*lines, separator, ""]


def _print(lines: Iterable[str]) -> None:
    sys.stdout.write("".join(line + "\n" for line in lines) + "\n")
    sys.stdout.flush()


def print_stats(stats: RequestStats, current: bool = True) -> None:
    _print(get_stats_summary(stats, current))


def print_percentile_stats(stats: RequestStats) -> None:
    _print(get_percentile_stats_summary(stats))


def print_error_report(stats: RequestStats) -> None:
    if stats.errors:
        _print(get_error_report_summary(stats))


def stats_printer(stats: RequestStats) -> Callable[[], None]:
    """A function that prints the stats table every 2 s, forever (Locust's, for a greenlet)."""

    def stats_printer_func() -> None:
        while True:
            print_stats(stats)
            time.sleep(CONSOLE_STATS_INTERVAL_SEC)  # cooperative in a squall run

    return stats_printer_func


def sort_stats(stats: dict[Any, Any]) -> list[Any]:
    return [stats[key] for key in sorted(stats)]


def update_stats_history(runner: Runner, timestamp: str | None = None) -> None:
    """One point of `stats.history` (Locust's report charts); squall keeps no sliding-window
    percentiles, so the chart's current percentiles are the run's so far."""
    stats = runner.stats
    timestamp = timestamp or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    point: dict[str, Any] = {
        f"response_time_percentile_{p}": [timestamp, stats.total.get_response_time_percentile(p) or 0]
        for p in PERCENTILES_TO_CHART
    }
    point.update(
        current_rps=[timestamp, stats.total.current_rps or 0],
        current_fail_per_sec=[timestamp, stats.total.current_fail_per_sec or 0],
        total_avg_response_time=[timestamp, proper_round(stats.total.avg_response_time, digits=2)],
        user_count=[timestamp, runner.user_count or 0],
        time=timestamp,
    )
    stats.history.append(point)


def stats_history(runner: Runner) -> None:
    """Adds a point to `stats.history` every 5 s while the test runs (Locust's, for a greenlet)."""
    while True:
        if runner.state not in ("ready", "stopped"):
            update_stats_history(runner)
        time.sleep(HISTORY_STATS_INTERVAL_SEC)

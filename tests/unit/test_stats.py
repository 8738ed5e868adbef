"""`environment.stats` read from a real engine in this process: verdicts recorded with known times
(`ScriptEngine.record`, no network), so every expected number is known exactly. Locust's edge cases,
units and forms are checked against the values Locust's own code gives (locust/stats.py, 2.47)."""

import hashlib
import math
import time

import pytest

from squall import _engine
from squall.env import Environment
from squall.event import Events
from squall.runtime.hub import Hub
from squall.stats import CACHE_S, StatsError, calculate_response_time_percentile

TIMES_US = [i * 1000 for i in range(1, 1001)]  # 1 ms to 1000 ms, one request each
# Locust's StatsEntry.to_dict() and StatsEntry.serialize() keys, in its order (locust/stats.py).
TO_DICT = [
    "method",
    "name",
    "num_requests",
    "num_failures",
    "min_response_time",
    "max_response_time",
    "current_rps",
    "current_fail_per_sec",
    "avg_response_time",
    "median_response_time",
    "total_rps",
    "total_fail_per_sec",
    "response_time_percentile_0.95",
    "response_time_percentile_0.99",
    "avg_content_length",
]
SERIALIZED = [
    "name",
    "method",
    "last_request_timestamp",
    "start_time",
    "num_requests",
    "num_none_requests",
    "num_failures",
    "total_response_time",
    "max_response_time",
    "min_response_time",
    "total_content_length",
    "response_times",
    "num_reqs_per_sec",
    "num_fail_per_sec",
]


def running_env():
    """An environment with its own engine and events, its test started."""
    hub = Hub(_engine.ScriptEngine())
    env = Environment(hub=hub, events=Events())
    env.started_at = time.monotonic()
    env.runner.state = "running"
    return env


def record_known(engine, failing_every=10):
    """GET /a: TIMES_US, 5 bytes each, every 10th a failure "boom"; POST /b: one of 1.5 ms, 7 bytes."""
    for i, us in enumerate(TIMES_US, 1):
        engine.record("GET", "/a", us, 200, 5, "boom" if i % failing_every == 0 else None)
    engine.record("POST", "/b", 1500, 201, 7, None)


def finish(env):
    env.runner.state = "stopped"
    env.result = env.hub.engine.finish("completed", "")
    return env.stats


def wait_published(env, requests, timeout=3.0):
    """Runs the hub until the live totals hold `requests` (the engine publishes whole seconds)."""
    deadline = time.monotonic() + timeout
    while env.stats.num_requests < requests:
        assert time.monotonic() < deadline, env.stats.num_requests
        env.hub.run_until(time.monotonic() + 0.05)


def test_empty_stats_answer_as_locusts():
    """Locust's values for an entry without requests (StatsEntry after reset())."""
    for env in (Environment(events=Events()), running_env()):
        stats = env.stats
        assert stats.entries == {} and stats.errors == {}
        for e in (stats.total, stats.get("/x", "GET")):
            assert (e.num_requests, e.num_failures, e.num_none_requests, e.fail_ratio) == (0, 0, 0, 0.0)
            assert (e.min_response_time, e.max_response_time, e.median_response_time) == (None, 0, 0)
            assert (e.avg_response_time, e.get_response_time_percentile(0.95), e.avg_content_length) == (0.0, 0, 0)
            assert (e.current_rps, e.total_rps, e.last_request_timestamp) == (0, 0.0, None)
            assert dict(e.response_times) == {} and dict(e.num_reqs_per_sec) == {}
        assert list(stats.entries) == [("/x", "GET")]  # get() made it, as Locust's does
        assert stats.get("/x", "GET") is stats.entries[("/x", "GET")]
        assert stats.total.to_dict()["min_response_time"] == 0 and stats.total.to_dict()["max_response_time"] == 0.0


def test_the_runs_numbers_once_it_has_ended():
    env = running_env()
    record_known(env.hub.engine)
    stats = finish(env)
    a, b, total = stats.get("/a", "GET"), stats.get("/b", "POST"), stats.total
    assert set(stats.entries) == {("/a", "GET"), ("/b", "POST")}
    assert (a.num_requests, a.num_failures, a.fail_ratio) == (1000, 100, 0.1)
    assert (total.num_requests, total.num_failures) == (stats.num_requests, stats.num_failures) == (1001, 100)
    assert total.fail_ratio == 100 / 1001
    # Milliseconds as floats, HDR's: within 0.1% (exact below 2.048 ms, where its buckets are 1 µs).
    assert a.min_response_time == 1.0 and 1000.0 <= a.max_response_time <= 1001.0
    assert (b.min_response_time, b.max_response_time, b.median_response_time) == (1.5, 1.5, 1.5)
    assert a.avg_response_time == pytest.approx(500.5, rel=1e-3)
    assert a.total_response_time == pytest.approx(a.avg_response_time * 1000)
    assert (a.total_content_length, total.total_content_length, b.avg_content_length) == (5000, 5007, 7.0)
    # Per-second counts add up; the run's second(s) are Unix seconds of now.
    assert sum(a.num_reqs_per_sec.values()) == 1000 and sum(a.num_fail_per_sec.values()) == 100
    assert all(abs(t - time.time()) < 60 for t in total.num_reqs_per_sec)
    assert stats.start_time <= total.last_request_timestamp <= time.time()
    assert list(a.to_dict()) == TO_DICT and list(a.serialize()) == SERIALIZED


def test_percentiles_are_hdr_exact_at_any_percentile():
    """The value at rank ceil(p N) within 0.1% (3 significant digits), for percentiles Locust reports and
    others. One rank of slack: p x N in floating point can land just above a whole number."""
    env = running_env()
    record_known(env.hub.engine)
    a = finish(env).get("/a", "GET")
    for p in (0.01, 0.333, 0.5, 0.9, 0.95, 0.97, 0.999):
        value_us = a.get_response_time_percentile(p) * 1000
        rank = math.ceil(p * len(TIMES_US))
        candidates = TIMES_US[rank - 1 : rank + 1]
        assert any(t <= value_us <= t * 1.001 for t in candidates), (p, value_us, candidates)
    assert a.get_response_time_percentile(1.0) == a.max_response_time  # never above the max
    assert a.median_response_time == a.get_response_time_percentile(0.5)
    # Locust's own definition, on its 2-digit buckets of the same times, lands within its rounding.
    locust_median = calculate_response_time_percentile(a.response_times, a.num_requests, 0.5)
    assert abs(locust_median - a.median_response_time) <= 10  # buckets of 10 ms between 100 and 1000 ms
    assert sum(a.response_times.values()) == 1000


def test_errors_as_locusts():
    env = running_env()
    record_known(env.hub.engine)
    before = time.time()
    stats = finish(env)
    (key, error), *others = stats.errors.items()
    assert others == []
    assert key == hashlib.sha256(f"GET./a.{'boom'!r}".encode()).hexdigest()  # Locust's create_key
    assert (error.method, error.name, error.error, error.occurrences) == ("GET", "/a", "boom", 100)
    assert error.to_name() == "GET /a: boom"
    assert before - 60 < error.first_seen <= error.last_seen <= time.time()
    assert list(error.to_dict()) == ["method", "name", "error", "occurrences", "first_seen", "last_seen"]
    assert StatsError.parse_error("<x object at 0x7f00aa>") == "<x object at 0x....>"
    assert env.runner.errors is stats.errors


def test_live_totals_then_test_stop_reads_the_final_numbers():
    """During the run the stats hold the seconds the engine has published; once the users are done
    (state "stopped", as in test_stop) a read waits for the last second, so it counts everything; its
    percentiles are those of the result where Locust reports them, and never below them elsewhere."""
    env = running_env()
    record_known(env.hub.engine)
    assert env.stats.num_requests in (0, 1001)  # a second is published whole, after it ends
    env.runner.state = "stopped"
    started = time.monotonic()
    a = env.stats.get("/a", "GET")
    assert (env.stats.num_requests, a.num_failures) == (1001, 100)
    assert time.monotonic() - started < 1.1 + 0.5  # the rest of the second, a roll, and slack
    live = {p: a.get_response_time_percentile(p) for p in (0.5, 0.95, 0.97, 0.99, 1.0)}
    live_median, spread = a.median_response_time, sum(a.response_times.values())
    assert spread == 1000  # rebuilt from the percentile spectrum, every request in it
    env.result = env.hub.engine.finish("completed", "")
    exact = {p: a.get_response_time_percentile(p) for p in live}
    assert {p: live[p] for p in (0.5, 0.95, 0.99, 1.0)} == {p: exact[p] for p in (0.5, 0.95, 0.99, 1.0)}
    assert live[0.97] >= exact[0.97] and live_median == a.median_response_time


def test_a_reading_serves_reads_for_a_tenth_of_a_second():
    env = running_env()
    engine = env.hub.engine
    calls = []

    class Counting:
        """The real engine, its live() calls counted."""

        def __getattr__(self, name):
            return getattr(engine, name)

        def live(self, cursor):
            calls.append(cursor)
            return engine.live(cursor)

    env.hub.engine = Counting()
    stats = env.stats
    for _ in range(10):
        stats.total.num_requests, stats.total.fail_ratio, stats.entries, stats.errors  # noqa: B018
    assert len(calls) == 1
    time.sleep(CACHE_S)
    stats.total.num_requests  # noqa: B018
    assert len(calls) == 2


def test_reset_all_starts_the_engines_totals_afresh():
    """As Locust's reset_all(): entries stay, at zero; errors go; what comes after counts, in quitting too,
    and in the run's result (its tables and files count from the reset, as Locust's --reset-stats),
    from the start of the next second (the engine's reset: the totals are the sum of the seconds)."""
    env = running_env()
    engine = env.hub.engine
    record_known(engine)
    wait_published(env, 1001)
    env.stats.reset_all()
    a = env.stats.get("/a", "GET")
    assert (env.stats.num_requests, a.num_requests, env.stats.errors) == (0, 0, {})
    assert ("/a", "GET") in env.stats.entries
    engine.record("GET", "/c", 1800, 200, 1, None)  # the reset's second: not counted
    elapsed = time.monotonic() - env.started_at
    time.sleep(math.ceil(elapsed + 0.05) - elapsed)  # (the engine's clock starts a little before the test's)
    for _ in range(50):
        engine.record("GET", "/c", 1800, 200, 1, "late" if _ % 2 else None)
    env.runner.state = "stopped"
    env.events.test_stop.fire(environment=env)
    assert (env.stats.num_requests, env.stats.num_failures) == (50, 25)
    env.result = engine.finish("completed", "")
    assert env.result["aggregate"]["requests"] == 50
    stats = env.stats
    assert (stats.num_requests, stats.num_failures, stats.get("/c", "GET").median_response_time) == (50, 25, 1.8)
    assert [e.error for e in stats.errors.values()] == ["late"]
    assert sum(stats.total.num_reqs_per_sec.values()) == 50
    stats.reset_all()  # after the run: zeros, as Locust's
    assert stats.num_requests == 0

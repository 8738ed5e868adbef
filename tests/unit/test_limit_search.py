"""The breaking-point search against targets of known capacity, simulated: the same `find` the commands
run, fed steps whose outcome follows from the capacity."""

import pytest

from squall import limit, thresholds


def target(capacity, queue_ms_per_excess=1.0):
    """A simulated step at `load`: achieved is min(load, capacity); above capacity latency grows."""
    calls = []

    def measure(load):
        calls.append(load)
        achieved = min(load, capacity)
        p95 = 2000 + max(0.0, load - capacity) * queue_ms_per_excess * 1000
        result = {
            "duration_s": 1.0,
            "aggregate": {"requests": achieved, "failures": 0, "mean_us": 2000.0, "max_us": p95,
                          "min_us": 100, "percentiles_us": {"50": 1500, "95": p95, "99": p95}},
            "endpoints": [],
            "timeseries": [],
        }  # fmt: skip
        return limit.judge(result, load, thresholds.parse_all(limit.DEFAULT_SLOS), connections=100)

    return measure, calls


@pytest.mark.parametrize("capacity, start", [(1000, 400), (1000, 5000), (37, 1), (250_000, 60_000)])
def test_the_limit_is_within_the_precision_of_the_capacity(capacity, start):
    measure, calls = target(capacity)
    out = limit.find(measure, start=start)
    assert out.limit is not None and capacity / 1.06 <= out.limit <= capacity / limit.KEEP_UP
    assert out.failed_at is not None and out.failed_at > out.limit
    assert len(calls) <= 14


def test_users_are_whole_numbers():
    measure, calls = target(17)
    out = limit.find(measure, start=4, whole=True)
    assert all(c == int(c) for c in calls) and out.limit in (17, 16)


def test_max_rate_caps_the_search():
    measure, _ = target(10_000)
    out = limit.find(measure, start=100, most=1000)
    assert out.limit == 1000 and out.failed_at is None and "--max-rate" in out.reason


def test_a_generator_that_falls_behind_gives_no_limit():
    def measure(load):
        result = {
            "duration_s": 1.0,
            "aggregate": {"requests": load * 0.8, "failures": 0, "mean_us": 1000.0, "max_us": 2000,
                          "min_us": 100, "percentiles_us": {"50": 1000, "95": 1500, "99": 1800}},
            "endpoints": [],
            "timeseries": [],
            "schedule": {"sent": load, "late": load * 0.5},
        }  # fmt: skip
        return limit.judge(result, load, thresholds.parse_all(limit.DEFAULT_SLOS), connections=100)

    out = limit.find(measure, start=1000)
    assert out.limit is None and "generator" in out.reason and out.steps[0].generator_bound


def test_latency_climbing_within_a_step_fails_it():
    series = [{"requests": 1000, "percentiles_us": {"50": ms * 1000}} for ms in (2, 3, 5, 9, 20)]
    result = {
        "duration_s": 5.0,
        "aggregate": {"requests": 5000, "failures": 0, "mean_us": 8000.0, "max_us": 30000, "min_us": 100,
                      "percentiles_us": {"50": 5000, "95": 20000, "99": 25000}},
        "endpoints": [],
        "timeseries": series,
    }  # fmt: skip
    step = limit.judge(result, 1000, thresholds.parse_all(limit.DEFAULT_SLOS))
    assert not step.passed and "climbing" in step.reason


def test_a_saturated_generator_is_not_the_targets_limit():
    result = {
        "duration_s": 1.0,
        "aggregate": {"requests": 900, "failures": 0, "mean_us": 1000.0, "max_us": 2000, "min_us": 100,
                      "percentiles_us": {"50": 1000, "95": 1500, "99": 1800}},
        "endpoints": [],
        "timeseries": [],
        "generator": {"saturated": True, "warnings": ["engine thread 'squall-worker-0' at 99% CPU for 5 s"]},
    }  # fmt: skip
    step = limit.judge(result, 1000, thresholds.parse_all(limit.DEFAULT_SLOS))
    assert step.generator_bound and "squall-worker-0" in step.reason

"""`squall compare --fail-if`: regression gates' expressions and verdicts on known numbers."""

import math

import pytest

from squall import gates


def ep(method, name, requests, failures=0, p95=3000, max_us=5000):
    return {"method": method, "name": name, "requests": requests, "failures": failures, "min_us": 100,
            "max_us": max_us, "mean_us": 1500.0, "percentiles_us": {"50": 1000, "95": p95, "100": max_us}}  # fmt: skip


def run(aggregate, *endpoints, seconds=10.0):
    return {"duration_s": seconds, "aggregate": aggregate, "endpoints": list(endpoints)}


BASE = run(ep("", "Aggregated", 1000, failures=10), ep("GET", "/a", 600, failures=10), ep("POST", "/a", 400))
NEW = run(
    ep("", "Aggregated", 900, failures=27, p95=3600),
    ep("GET", "/a", 500, failures=27, p95=3600),
    ep("POST", "/a", 400, p95=2700),
)


@pytest.mark.parametrize(
    "text, passed, detail",
    [
        ("p95>+10%", False, "3.000 ms -> 3.600 ms (+20.0%)"),
        ("p95>+20%", True, "(+20.0%)"),  # exactly 20% is not more than 20%
        ("p95>=+20%", False, "(+20.0%)"),
        ("rps<-5%", False, "100.0/s -> 90.0/s (-10.0%)"),
        ("rps<-10.5%", True, "(-10.0%)"),
        ("error_rate>+1pp", False, "1.000% -> 3.000% (+2.00 pp)"),
        ("error_rate>+2.5pp", True, "(+2.00 pp)"),
        ("failures>+100%", False, "(+170.0%)"),
        ("POST /a: p95>+0%", True, "POST /a: 3.000 ms -> 2.700 ms (-10.0%)"),
        ("/a: p95>+10%", False, "GET /a: 3.000 ms -> 3.600 ms (+20.0%)"),  # every method of a bare name
    ],
)
def test_verdicts_on_known_numbers(text, passed, detail):
    (v,) = gates.evaluate_runs([gates.parse(text)], [("base", BASE), ("new", NEW)])
    assert v.passed is passed and v.detail.endswith(detail) and v.run == "new", v


def test_what_a_later_run_lacks_or_the_first_never_had_fails():
    gone = run(ep("", "Aggregated", 600), ep("GET", "/a", 600))
    (v,) = gates.evaluate_runs([gates.parse("POST /a: p95>+10%")], [("base", BASE), ("new", gone)])
    assert not v.passed and v.detail == "POST /a: not in this run"
    (v,) = gates.evaluate_runs([gates.parse("/typo: p95>+10%")], [("base", BASE), ("new", NEW)])
    assert not v.passed and "no endpoint '/typo' in the first run" in v.detail


def test_a_count_from_zero_is_a_rise_without_a_percentage():
    gate = gates.parse("failures>+50%")
    assert gate.change(0, 3) == math.inf and gate.change(0, 0) == 0
    clean = run(ep("", "Aggregated", 10))
    (v,) = gates.evaluate_runs([gate], [("base", clean), ("new", run(ep("", "Aggregated", 10, failures=3)))])
    assert not v.passed and v.detail.endswith("(from 0)")


@pytest.mark.parametrize(
    "text, why",
    [
        ("p95>10%", "a change carries its sign"),
        ("error_rate>+1%", "percentage points (pp)"),
        ("p95>+10pp", "in % of the first run's"),
        ("lost>+1%", "MQTT delivery count"),
        ("p101>+1%", "between p0 and p100"),
        ("speed>+1%", "unknown metric 'speed'"),
        ("p95==+1%", "expected like"),
    ],
)
def test_bad_expressions_are_refused_with_a_reason(text, why):
    with pytest.raises(ValueError, match="invalid --fail-if") as e:
        gates.parse(text)
    assert why in str(e.value)


def test_the_block_counts_and_says_the_exit_code():
    verdicts = gates.evaluate_runs([gates.parse("p95>+10%"), gates.parse("rps<-50%")], [("a", BASE), ("b", NEW)])
    text = gates.block(verdicts, "a")
    assert text.splitlines()[0] == "Regression gates (--fail-if), against a"
    assert "FAIL  p95>+10%" in text and "pass  rps<-50%" in text
    assert text.endswith("1 passed, 1 failed (exit code 99)\n")

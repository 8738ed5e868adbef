"""Threshold expressions: parsing, units, scopes, and verdicts against known numbers."""

import pytest

from squall import thresholds as th


def ep(method, name, requests, failures=0, pct=None, max_us=5000, spectrum=None):
    return {
        "method": method,
        "name": name,
        "requests": requests,
        "failures": failures,
        "min_us": 100,
        "max_us": max_us,
        "mean_us": 1500.0,
        "percentiles_us": pct or {"50": 1000, "95": 3000, "99": 4000, "99.9": 4900, "100": max_us},
        "spectrum": spectrum or [],
    }


DOC = {
    "duration_s": 10.0,
    "aggregate": ep("", "Aggregated", 1000, failures=5),
    "endpoints": [ep("GET", "/a", 600, failures=5), ep("POST", "/a", 100), ep("GET", "/b", 300, max_us=2_500_000)],
}


@pytest.mark.parametrize(
    "text, metric, stat, op, limit, scope",
    [
        ("p95<300ms", "latency", "p95", "<", 300_000, None),
        ("p99.9 < 1s", "latency", "p99.9", "<", 1_000_000, None),
        ("max<2s", "latency", "max", "<", 2_000_000, None),
        ("mean<100", "latency", "mean", "<", 100_000, None),  # no unit: ms, as k6
        ("median<=250us", "latency", "p50", "<=", 250, None),
        ("error_rate<1%", "error_rate", "", "<", 0.01, None),
        ("error_rate<0.05", "error_rate", "", "<", 0.05, None),
        ("rps>=500", "rps", "", ">=", 500, None),
        ("GET /api/cases: p95<200ms", "latency", "p95", "<", 200_000, "GET /api/cases"),
        ("http://h/x?a=1: max<1s", "latency", "max", "<", 1_000_000, "http://h/x?a=1"),
        ("lost==0", "lost", "", "==", 0, None),
        ("deliver.p99<50ms", "latency", "p99", "<", 50_000, "DELIVER"),
        ("publish.p95<20ms", "latency", "p95", "<", 20_000, "PUBLISH"),
    ],
)
def test_expressions_parse(text, metric, stat, op, limit, scope):
    t = th.parse(text)
    assert (t.metric, t.stat, t.op, t.scope) == (metric, stat, op, scope)
    assert t.limit == pytest.approx(limit)


@pytest.mark.parametrize(
    "text",
    ["p95", "p95<", "p95<3xs", "p101<1s", "error_rate<2", "error_rate<1ms", "rps>5%", "requests>1.5", "lat<1",
     "/x: lost==0", "foo.p95<1s", "", "p95 << 3"],
)  # fmt: skip
def test_bad_expressions_are_refused_with_a_reason(text):
    with pytest.raises(ValueError, match="invalid threshold"):
        th.parse(text)


def verdict(text):
    return th.evaluate(th.parse(text), DOC, th.live_percentile)


def test_verdicts_on_known_numbers():
    assert verdict("p95<3ms").passed is False and verdict("p95<3ms").value == 3000  # 3 ms is not < 3 ms
    assert verdict("p95<=3ms").passed
    assert verdict("error_rate<1%").passed and verdict("error_rate<1%").value == pytest.approx(0.005)
    assert not verdict("error_rate<0.4%").passed
    assert verdict("rps>=100").value == 100.0 and verdict("rps>=100").passed
    assert verdict("requests==1000").passed and verdict("failures>0").passed


def test_p0_and_p100_are_the_exact_extremes_not_a_buckets_edge():
    # (the histogram says 90 us at p0 and 5,003 at p100 for requests of 100 to 5,000 us)
    doc = {**DOC, "aggregate": {**DOC["aggregate"], "percentiles_us": {"0": 90, "100": 5003}}}
    low, high = th.evaluate(th.parse("p0>=100us"), doc), th.evaluate(th.parse("p100<=5ms"), doc)
    assert (low.value, low.passed, high.value, high.passed) == (100, True, 5000, True)


def test_a_scope_names_an_endpoint_and_every_method_of_a_bare_name_must_pass():
    assert verdict("GET /a: failures==5").passed
    assert verdict("POST /a: failures==0").passed
    bare = verdict("/a: failures==0")  # GET /a has 5: the bare name fails, showing the failing one
    assert not bare.passed and bare.value == 5
    assert not verdict("/b: max<2s").passed and verdict("/b: max<3s").passed


def test_a_name_that_matches_nothing_fails_loudly():
    v = verdict("/typo: p95<1s")
    assert not v.passed and v.value is None and "no endpoint" in v.reason


def test_live_percentiles_come_from_the_spectrum_never_below_the_exact_value():
    e = ep("", "Aggregated", 10, spectrum=[[50.0, 1000], [96.875, 3500], [100.0, 5000]])
    assert th.live_percentile(e, 95) == 3000  # reported: exact
    assert th.live_percentile(e, 96) == 3500  # the next point above
    assert th.live_percentile(e, 99.99) == 5000


def test_mqtt_counts_need_the_delivery_report():
    v = th.evaluate(th.parse("lost==0"), DOC)
    assert not v.passed and "--verify" in v.reason
    doc = dict(DOC, mqtt={"unsent": 0, "published": 10, "delivery": {"lost": 0, "delivered": 10}})
    assert th.evaluate(th.parse("lost==0"), doc).passed
    assert th.evaluate(th.parse("delivered>=10"), doc).passed


def test_the_watch_waits_for_the_grace_then_stops_once():
    w = th.Watch([th.parse("p95<1ms")], grace=5.0)
    live = {"totals": {"aggregate": DOC["aggregate"], "endpoints": DOC["endpoints"]}}
    assert not w.stops(live, 4.9)
    assert w.stops(live, 5.1)
    assert not w.stops(live, 6.0)  # once
    assert w.failed[0].value == 3000


def test_the_block_lists_each_verdict():
    text = th.block([verdict("p95<3ms"), verdict("rps>=100")])
    assert "FAIL  p95<3ms" in text and "pass  rps>=100" in text and "1 passed, 1 failed (exit code 99)" in text


def test_the_block_says_an_exit_code_that_is_not_the_thresholds():
    """Thresholds that pass, in a run that still exits non-zero, never end on a silent code."""
    passing = [verdict("rps>=100")]
    assert th.block(passing).splitlines()[-1] == "  1 passed, 0 failed"
    text = th.block(passing, 1, "93 requests failed (--exit-code-on-error 1)")
    assert text.splitlines()[-2:] == [
        "  1 passed, 0 failed",
        "  exit code 1: 93 requests failed (--exit-code-on-error 1)",
    ]
    # A failed threshold's code is the block's own line already.
    assert "exit code 99:" not in th.block([verdict("p95<3ms")], 99, "a threshold failed")

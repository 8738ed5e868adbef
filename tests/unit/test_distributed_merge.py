"""The pure parts of distributed runs (squall.distributed): the live merge of the workers' seconds and
totals, the shares, the workers' command line. Ground truth: samples drawn here, whose exact union
percentiles are known, and the arithmetic of counts."""

import json
import math
import os
import random
import statistics

import pytest

import hdr
from squall.distributed import actor, shares, stream
from squall.distributed.driver import worker_argv
from squall.distributed.feed import WorkerFeed, strip_totals
from squall.distributed.workers import WorkerState, entry, table
from squall.errors import UsageError


def spectrum_grid():
    """The percentiles HdrHistogram's distribution prints (five ticks per halving), as the engine's
    spectrum has them."""
    p, grid = 0.0, []
    while p < 99.99:
        grid.append(p)
        ticks = 5 * 2 ** (math.floor(math.log2(100 / (100 - p))) + 1)
        p += 100 / ticks
    return [*grid, 100.0]


def at(sorted_samples, q):
    """HDR's value at percentile q: the smallest sample with at least q% of them at or below it."""
    n = len(sorted_samples)
    return sorted_samples[max(1, math.ceil(q / 100 * n - 1e-9)) - 1]


KEYS = ["50", "66", "75", "80", "90", "95", "98", "99", "99.9", "99.99", "100"]


def summary(samples, spectrum=True):
    s = sorted(samples)
    part = {
        "requests": len(s),
        "failures": 0,
        "body_bytes": 10 * len(s),
        "wire_bytes": 20 * len(s),
        "min_us": s[0],
        "max_us": s[-1],
        "mean_us": statistics.fmean(s),
        "stdev_us": statistics.pstdev(s),
        "percentiles_us": {k: at(s, float(k)) for k in KEYS},
        "status_codes": {"200": len(s)},
    }
    if spectrum:
        part["spectrum"] = [(q, at(s, q)) for q in spectrum_grid()]
        part["buckets"] = [(b, sum(1 for x in s if x <= b)) for b in (500, 1000, 5000)]
    return part


def test_one_part_keeps_its_own_percentiles():
    part = summary([random.Random(1).randint(50, 5000) for _ in range(1000)])
    assert stream.mixed_percentiles([part], KEYS) == part["percentiles_us"]


def test_identical_parts_give_their_percentiles():
    rng = random.Random(2)
    samples = [rng.randint(50, 5000) for _ in range(2000)]
    part = summary(samples, spectrum=False)
    merged = stream.mixed_percentiles([part, dict(part)], KEYS)
    # Both curves pass through the same points: the mixture does too, exactly at each percentile.
    assert merged == part["percentiles_us"]


def test_mixture_of_spectra_is_close_to_the_union():
    """Two workers with different latencies (a fast and a slow node): the estimate from their spectra,
    against the exact percentiles of all samples. Between two of a spectrum's points a distribution
    is taken as linear; the spectrum has five points per halving of the tail, so for smooth
    distributions the error is a few percent of the value at most (measured here: under 2%)."""
    rng = random.Random(3)
    fast = [int(rng.lognormvariate(math.log(800), 0.4)) + 1 for _ in range(30000)]
    slow = [int(rng.lognormvariate(math.log(2000), 0.5)) + 1 for _ in range(10000)]
    union = sorted(fast + slow)
    merged = stream.merge_summaries([summary(fast), summary(slow)], spectrum=True)
    for k in KEYS[:-2]:  # 99.99 and 100 rest on a handful of samples: see the next test for the max
        exact = at(union, float(k))
        assert abs(merged["percentiles_us"][k] - exact) <= 0.04 * exact, (k, merged["percentiles_us"][k], exact)
    assert merged["percentiles_us"]["100"] == union[-1]  # the maximum is known exactly


def test_summaries_merge_counts_mean_and_stdev_exactly():
    rng = random.Random(4)
    a = [rng.randint(10, 1000) for _ in range(500)]
    b = [rng.randint(500, 3000) for _ in range(1500)]
    merged = stream.merge_summaries([summary(a), summary(b)], spectrum=True)
    assert merged["requests"] == 2000 and merged["body_bytes"] == 20000 and merged["wire_bytes"] == 40000
    assert merged["min_us"] == min(a + b) and merged["max_us"] == max(a + b)
    assert merged["mean_us"] == pytest.approx(statistics.fmean(a + b), rel=1e-12)
    assert merged["stdev_us"] == pytest.approx(statistics.pstdev(a + b), rel=1e-9)
    assert merged["status_codes"] == {"200": 2000}
    assert dict(merged["buckets"]) == {bound: sum(1 for x in a + b if x <= bound) for bound in (500, 1000, 5000)}
    assert merged["spectrum"][0][1] == min(a + b) and merged["spectrum"][-1] == (100.0, max(a + b))


def point(t, start, requests, users=2):
    s = summary(list(range(100, 100 + requests)), spectrum=False) if requests else None
    base = dict(s) if s else {**{k: 0 for k in stream.SUMMED}, "min_us": 0, "max_us": 0, "mean_us": 0.0}
    base.update(stdev_us=base.get("stdev_us", 0.0), percentiles_us=base.get("percentiles_us", {}))
    base.pop("status_codes", None)
    cumulative = {"requests": requests, "failures": 0, "median_us": 150, "mean_us": 150.0, "min_us": 100}
    cumulative.update(max_us=200, body_bytes=0)
    return {"t": t, "unix": start + t, "users": users, **base, "endpoints": [], "cumulative": cumulative}


def test_seconds_align_on_the_wall_clock_and_wait_for_every_worker():
    now = [1000.0]
    merge = stream.LiveMerge(clock=lambda: now[0])
    merge.join(0)
    merge.join(1)
    merge.add(0, [point(0, 1000.0, 10), point(1, 1000.0, 20)], None)
    now[0] = 1002.1
    assert merge.read(0)["timeseries"] == []  # worker 1 has sent nothing yet: it may have started earlier
    merge.add(1, [point(0, 1000.4, 5)], None)  # started 0.4 s later: its second 0 is merged second 0
    live = merge.read(0)
    assert [(p["t"], p["requests"]) for p in live["timeseries"]] == [(0, 15)]
    assert live["cursor"] == 1
    merge.add(1, [point(1, 1000.4, 7)], None)
    assert [(p["t"], p["requests"], p["users"]) for p in merge.read(1)["timeseries"]] == [(1, 27, 4)]


def test_a_late_worker_does_not_hold_the_stream_back():
    now = [1000.0]
    merge = stream.LiveMerge(clock=lambda: now[0])
    merge.join(0)
    merge.join(1)
    merge.add(1, [point(0, 999.6, 1)], None)
    merge.add(0, [point(0, 1000.0, 10), point(1, 1000.0, 10), point(2, 1000.0, 10)], None)
    now[0] = 999.6 + 2 + stream.LATE_S  # second 1 ended LATE_S ago: out without worker 1's part
    assert [(p["t"], p["requests"]) for p in merge.read(0)["timeseries"]] == [(0, 11), (1, 10)]
    merge.add(1, [point(1, 999.6, 3)], None)  # too late for the stream: counted, not added
    assert merge.late_parts == 1
    merge.leave(1)
    assert [(p["t"], p["requests"]) for p in merge.read(2)["timeseries"]] == [(2, 10)]


def test_totals_merge_endpoints_and_errors():
    def totals(samples, errors):
        agg = dict(summary(samples), method="", name="Aggregated")
        return {"aggregate": agg, "endpoints": [dict(summary(samples), method="GET", name="/")], "errors": errors}

    err = {"method": "GET", "name": "/", "kind": "http", "status": 500, "message": "boom", "count": 3}
    a = totals([100, 200, 300], [dict(err, first_seen_s=1.0, last_seen_s=2.0)])
    b = totals([400, 500], [dict(err, count=2, first_seen_s=0.5, last_seen_s=1.5)])
    merged = stream.merge_totals([a, b])
    assert merged["aggregate"]["requests"] == 5 and merged["endpoints"][0]["requests"] == 5
    assert merged["errors"] == [dict(err, count=5, first_seen_s=0.5, last_seen_s=2.0)]


def test_bench_shares_add_up_to_the_whole():
    config = {"connections": 7, "requests": 1001, "rate": 100.0, "duration": None}
    parts = [shares.bench_share(config, (i, 3)) for i in range(3)]
    assert sum(p["connections"] for p in parts) == 7
    assert sum(p["requests"] for p in parts) == 1001
    assert sum(p["rate"] for p in parts) == pytest.approx(100.0)
    assert shares.bench_shares(config, 3)[0] == {"connections": 3, "requests": 334, "rate": 33.333}
    assert [s["first_client"] for s in shares.mqtt_shares(10, 3)] == [0, 4, 7]
    with pytest.raises(UsageError, match="3 workers for 2 connections"):
        shares.check_workers(3, 2, "connections")


def test_a_replacement_gets_the_rest_of_the_share(monkeypatch):
    timed = {"connections": 4, "requests": None, "duration": 10.0}
    env = shares.remaining(timed, (0, 2), elapsed=4.0, sent=123)
    assert json.loads(env[shares.REMAINING_ENV]) == {"duration": 6.0}
    counted = {"connections": 4, "requests": 1000, "duration": None}
    env = shares.remaining(counted, (1, 2), elapsed=4.0, sent=200)
    assert json.loads(env[shares.REMAINING_ENV]) == {"requests": 300}
    assert shares.remaining(counted, (1, 2), elapsed=4.0, sent=500) == {}  # nothing left of it
    monkeypatch.setenv(shares.REMAINING_ENV, env[shares.REMAINING_ENV])
    assert shares.bench_share(counted, (1, 2))["requests"] == 300


def test_workers_run_the_command_without_the_distributed_flags():
    argv = ["bench", "URL", "--ray", "auto", "--workers=3", "-c", "4", "--on-worker-loss", "stop", "--rate", "9"]
    assert worker_argv(argv) == ["bench", "URL", "-c", "4", "--rate", "9"]
    master = ["-f", "x.py", "--master", "--master-bind-host", "*", "--master-bind-port=5557", "--expect-workers", "2"]
    master += ["--expect-workers-max-wait", "9", "-u", "4"]
    assert worker_argv(master) == ["-f", "x.py", "-u", "4"]


def test_locustfiles_go_to_nodes_that_do_not_have_them(tmp_path):
    a, b = tmp_path / "a" / "load.py", tmp_path / "b" / "load.py"
    a.parent.mkdir()
    b.parent.mkdir()
    a.write_text("A = 1\n")
    b.write_text("B = 2\n")
    files = actor.pack([str(a), str(b)])
    assert actor._present(files)  # here, as the driver has them: run where they are
    b.write_text("B = 3\n")
    assert not actor._present(files)  # changed since: the driver's texts run
    w = actor.Worker(0, 1, ["-f", str(a), "-u", "1"], {}, str(tmp_path), "http", files)
    assert w.shipped and w.argv[:4] == ["-f", str(a), "-u", "1"] and w.argv[4] == "-f"
    shipped = w.argv[5].split(",")
    assert [open(p).read() for p in shipped] == ["A = 1\n", "B = 2\n"]
    assert len(set(shipped)) == 2 and all(os.path.basename(p) == "load.py" for p in shipped)  # names kept


def test_the_feed_writes_one_line_a_second_with_the_histograms():
    read_fd, write_fd = os.pipe()
    feed = WorkerFeed(write_fd)
    agg = {"requests": 2, "histogram": "H", "spectrum": [(0.0, 1)], "buckets": [(500, 2)]}
    feed.add({"timeseries": [{"t": 0, "histogram": "S"}], "totals": {"aggregate": agg, "endpoints": [], "errors": []}})
    feed.done()
    with os.fdopen(read_fd) as f:
        line = json.loads(f.readline())
    # The driver recomputes the spectrum and buckets from the histogram.
    expected = {"aggregate": {"requests": 2, "histogram": "H"}, "endpoints": [], "errors": []}
    assert line == {"timeseries": [{"t": 0, "histogram": "S"}], "totals": expected}
    empty = {"requests": 0, "histogram": "", "spectrum": []}  # nothing yet: no histogram to send
    assert strip_totals({"aggregate": empty, "endpoints": [], "errors": []})["aggregate"] == {
        "requests": 0,
        "spectrum": [],
    }


def hdr_percentile(values, p):
    """HdrHistogram's value at percentile p of `values` (exact below 2048 with 3 digits): the least
    value with at least ceil(p% of n) values at or below it."""
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[rank - 1]


def test_merged_live_percentiles_are_exact_when_the_workers_send_histograms():
    """Two workers' very different latencies (samples drawn here, under 2048 µs, where HDR's 3 digits
    hold every value exactly): the merged second's percentiles are those of the union, computed here."""
    rng = random.Random(7)
    a = [rng.randint(100, 900) for _ in range(3000)]
    b = [rng.randint(800, 2000) for _ in range(1000)]
    parts = []
    for values in (a, b):
        parts.append(
            {
                "requests": len(values),
                "failures": 0,
                "min_us": min(values),
                "max_us": max(values),
                "mean_us": statistics.fmean(values),
                "stdev_us": statistics.pstdev(values),
                "percentiles_us": {},
                "histogram": hdr.encode_small(values),
            }
        )
    merged = stream.merge_summaries(parts, spectrum=True)
    union = a + b
    for key, value in merged["percentiles_us"].items():
        assert value == hdr_percentile(union, float(key)), key
    assert (merged["min_us"], merged["max_us"], merged["requests"]) == (min(union), max(union), 4000)
    assert merged["mean_us"] == pytest.approx(statistics.fmean(union), rel=1e-9)
    assert dict(merged["buckets"])[1000] == sum(1 for v in union if v <= 1000)
    assert merged["histogram"] == ""  # the merged stream carries none, as a single engine's


def test_the_workers_table_lists_each_worker():
    w = WorkerState(index=0, count=2, slot=0, info={"host": "node-a", "node_ip": "10.0.0.1", "node_id": "n1"})
    w.state, w.code, w.points = "exited", 0, 5
    w.final = {"cpu_s": 1.5, "wall_s": 6.0}
    result = {"aggregate": {"requests": 5000, "failures": 0, "histogram": "H"}, "duration_s": 5.0}
    e = entry(w, {"connections": 4, "requests": 5000}, result)
    assert (e["rate"], e["cpu_percent"], e["histogram"], e["state"]) == (1000.0, 25.0, "H", "finished")
    lost = WorkerState(index=1, count=2, slot=1, info={"host": "node-b"}, state="lost", lost_reason="gone")
    lost.totals, lost.points = {"aggregate": {"requests": 300, "failures": 1}}, 3
    e2 = entry(lost, {"connections": 4}, None)
    assert (e2["requests"], e2["rate"], e2["lost"]) == (300, 100.0, "gone")
    text = table([e, e2])
    assert "node-a" in text and "4 conn, 5,000 req" in text and "lost: gone" in text

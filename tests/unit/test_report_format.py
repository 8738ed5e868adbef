"""The reports' number formats and Locust's table layout."""

import json
from pathlib import Path

import pytest

from squall.report import locust_console, locust_csv, totals
from squall.report.units import PERCENTILE_KEYS, ms, ms_exact, size


@pytest.mark.parametrize(
    "us, text",
    [
        (0, "0.00"),
        (1, "0.00"),
        (1234, "1.23"),
        (99_994, "99.99"),
        (100_000, "100.0"),
        (123_456, "123.5"),
        (999_940, "999.9"),
        (1_000_000, "1000"),
        (1_234_567, "1235"),
    ],
)
def test_ms(us, text):
    assert ms(us) == text


@pytest.mark.parametrize(
    "us, text", [(0, "0"), (1, "0.001"), (10, "0.01"), (1500, "1.5"), (1000, "1"), (123_456, "123.456"), (2e6, "2000")]
)
def test_ms_exact(us, text):
    assert ms_exact(us) == text


@pytest.mark.parametrize(
    "n, text",
    [
        (0, "0 B"),
        (999, "999 B"),
        (1000, "1.00 KB"),
        (1536, "1.54 KB"),
        (999_999, "1000.00 KB"),
        (1_000_000, "1.00 MB"),
        (2.5e9, "2.50 GB"),
        (5e12, "5000.00 GB"),
    ],
)
def test_size(n, text):
    assert size(n) == text


@pytest.mark.parametrize(
    "us, text", [(0, "0.00"), (950, "0.95"), (1000, "1.0"), (9_940, "9.9"), (10_000, "10"), (1.5e6, "1500")]
)
def test_locust_console_milliseconds(us, text):
    assert locust_console._ms(us) == text


def summary(requests, failures, mean_us, min_us, max_us, body_bytes=0, method="GET", name="/"):
    return {
        "method": method,
        "name": name,
        "requests": requests,
        "failures": failures,
        "mean_us": mean_us,
        "min_us": min_us,
        "max_us": max_us,
        "body_bytes": body_bytes,
        "percentiles_us": {k: max_us for k in PERCENTILE_KEYS} if requests else {},
    }


def test_stats_table_has_locusts_columns_and_the_aggregate_last():
    rows = [summary(10, 1, 2500, 1000, 40_000, name="/b"), summary(0, 0, 0, 0, 0, name="/a")]
    aggregate = summary(10, 1, 2500, 1000, 40_000)
    lines = locust_console.stats_table(rows, aggregate, duration_s=5.0).splitlines()
    assert lines[0].split() == [
        "Type", "Name", "#", "reqs", "#", "fails", "|", "Avg", "Min", "Max", "Med", "|", "req/s", "failures/s",
    ]  # fmt: skip
    assert [line.split()[1] for line in lines[2:4]] == ["/a", "/b"]  # sorted by name
    assert lines[3].split() == ["GET", "/b", "10", "1(10.00%)", "|", "2.5", "1.0", "40", "40", "|", "2.00", "0.20"]
    assert lines[-1].split()[:3] == ["Aggregated", "10", "1(10.00%)"]
    assert lines[1] == lines[-2] and set(lines[1]) == {"-", "|"}
    assert len({len(line) for line in lines if set(line) != {"-", "|"}}) == 1  # rows as wide as the header


def test_stats_table_uses_the_recent_rates_when_given():
    row = summary(10, 2, 1000, 1000, 1000)
    table = locust_console.stats_table([row], row, 100.0, rates={("GET", "/"): (3.5, 0.25)})
    assert table.splitlines()[2].split()[-2:] == ["3.50", "0.25"]


def test_stats_table_says_na_for_times_of_what_was_counted_but_not_timed():
    """A --subscribe-only run's messages from other publishers carry no send time: counted, not timed;
    its row said 0.00 ms for the average, min, max and median beside the percentiles table's N/A."""
    row = {**summary(7, 0, 0, 0, 0, method="RECEIVE", name="t/+"), "percentiles_us": {}}
    line = locust_console.stats_table([row], row, 1.0).splitlines()[2].split()
    assert line == ["RECEIVE", "t/+", "7", "0(0.00%)", "|", "N/A", "N/A", "N/A", "N/A", "|", "7.00", "0.00"]


def test_totals_after_a_reset_count_its_time_and_its_second():
    result = {"duration_s": 10.0, "reset_s": 2.5}
    assert totals.counted_s(result) == 7.5 and totals.first_counted_second(result) == 2
    assert totals.counted_s({"duration_s": 10.0}) == 10.0 and totals.first_counted_second({"duration_s": 10.0}) == 0


def test_percentiles_table_says_exact_and_na_without_requests():
    lines = locust_console.percentiles_table([summary(0, 0, 0, 0, 0)], summary(3, 0, 5000, 5000, 5000)).splitlines()
    assert lines[0] == "Response time percentiles (exact)"
    assert lines[3].split()[2:] == ["N/A"] * len(PERCENTILE_KEYS) + ["0"]
    assert lines[-1].split()[1:] == ["5.0"] * len(PERCENTILE_KEYS) + ["3"]


def test_csv_stats_row_in_milliseconds_to_the_microsecond():
    row = locust_csv.stats_row("GET", "/", summary(4, 1, 1234.5, 1001, 2002, body_bytes=400), duration=2.0)
    assert row[:11] == ["GET", "/", 4, 1, "2.002", 1.2345, "1.001", "2.002", 100.0, 2.0, 0.5]
    assert row[11:] == ["2.002"] * len(PERCENTILE_KEYS)
    assert len(row) == len(locust_csv.STATS_HEADER)


def test_csv_stats_row_without_requests():
    row = locust_csv.stats_row("GET", "/", summary(0, 0, 0, 0, 0), duration=0.0)
    assert row[:11] == ["GET", "/", 0, 0, 0, 0.0, "0", "0", 0, 0, 0]
    assert row[11:] == ["N/A"] * len(PERCENTILE_KEYS)


def test_error_report():
    assert locust_console.error_report([]) == ""
    report = locust_console.error_report([{"count": 3, "method": "GET", "name": "/x", "message": "HTTP 500"}])
    assert report.splitlines()[-1] == f"{3:<20} GET /x: HTTP 500"


def test_csv_numbers_carry_no_binary_noise():
    from squall.report.locust_csv import stats_row

    s = {"requests": 3, "failures": 1, "percentiles_us": {}, "mean_us": 190.61, "min_us": 1, "max_us": 2,
         "body_bytes": 10}  # fmt: skip
    row = stats_row("GET", "/", s, 0.7)
    assert row[5] == 0.19061 and row[8] == 3.333333 and row[9] == 4.285714 and row[10] == 1.428571


def test_histogram_edges_read_apart():
    """Edges a millisecond apart past 1 s read "1001" twice at the size's usual precision: more decimals
    then, as few as tell them apart; edges already apart keep theirs."""
    from squall.report.console import _edges

    assert _edges([1_001_471, 1_001_983, 1_002_495, 1_003_007]) == ["1001.5", "1002.0", "1002.5", "1003.0"]
    assert _edges([30, 50, 130, 2_000, 150_000, 1_200_000]) == ["0.03", "0.05", "0.13", "2.00", "150.0", "1200"]


def second(t, users, *endpoints):
    """A result's second: its endpoints as (name, requests, failures), no histograms (nothing timed)."""
    eps = [{"method": "GET", "name": n, "requests": r, "failures": f, "body_bytes": 10 * r} for n, r, f in endpoints]
    n, f = sum(e["requests"] for e in eps), sum(e["failures"] for e in eps)
    cumulative = dict.fromkeys(("requests", "failures", "median_us", "mean_us", "min_us", "max_us", "body_bytes"), 0)
    return {"t": t, "unix": 1000 + t, "users": users, "requests": n, "failures": f, "endpoints": eps} | {
        "cumulative": cumulative
    }


def test_full_history_rows_every_endpoint_seen_each_second_with_its_totals():
    """Locust writes every entry every second once it exists, sorted, with its totals so far; a reset's
    totals count from the second it fell in (known arithmetic over the counts)."""
    seconds = [second(0, 1, ("/b", 3, 1)), second(1, 2), second(2, 2, ("/a", 2, 0), ("/b", 1, 0))]
    rows = list(locust_csv.history_rows({"timeseries": seconds, "duration_s": 3.0}, full_history=True))
    table = [(r[0], r[3], r[4], r[-7], r[-6], r[-1]) for r in rows]  # stamp, name, requests, totals, size
    assert table[:3] == [(1001, "/b", 3, 3, 1, 10), (1001, "Aggregated", 3, 0, 0, 0), (1002, "/b", 0, 3, 1, 10)]
    assert [t[:5] for t in table[4:]] == [(1003, "/a", 2, 2, 0), (1003, "/b", 1, 4, 1), (1003, "Aggregated", 3, 0, 0)]
    reset = list(locust_csv.history_rows({"timeseries": seconds, "duration_s": 3.0, "reset_s": 1.5}, True))
    assert [(r[0], r[3], r[-7]) for r in reset] == [
        (1001, "/b", 0), (1001, "Aggregated", 0), (1002, "/b", 0), (1002, "Aggregated", 0),
        (1003, "/a", 2), (1003, "/b", 1), (1003, "Aggregated", 3),
    ]  # fmt: skip


def test_a_426_says_a_websocket_endpoint_takes_ws():
    """`squall bench http://...` against a WebSocket endpoint: every answer a 426 Upgrade Required."""
    from squall.report import console

    base = json.loads((Path(__file__).parents[2] / "web" / "samples" / "bench-closed.json").read_text())
    base["aggregate"]["status_codes"] = {"426": 10}
    assert "benched with ws:// or wss://" in console.summary({**base, "url": "http://127.0.0.1:8765/echo"})
    base["aggregate"]["status_codes"] = {"200": 10}
    assert "ws://" not in console.summary({**base, "url": "http://127.0.0.1:8765/echo"})


def test_percentiles_to_report_set_by_a_locustfile_are_the_columns(monkeypatch, tmp_path):
    """Locust's PERCENTILES_TO_REPORT, as a locustfile sets it, makes the CSV files' and the console
    table's percentile columns (Locust's labels: 0.333 is "33.3%"); the values at percentiles the engine
    does not report are exact, from the histograms: 1 ms to 1000 ms, one request each, have their 25th
    percentile at 250 ms and their 33.3th at 333 ms (HDR: within 0.1%)."""
    from squall import _engine, stats

    engine = _engine.ScriptEngine()
    for ms_ in range(1, 1001):
        engine.record("GET", "/a", ms_ * 1000, 200, 5, None)
    result = engine.finish("completed", "")
    monkeypatch.setattr(stats, "PERCENTILES_TO_REPORT", [0.25, 0.333, 0.5, 1.0])
    columns = ["25%", "33.3%", "50%", "100%"]
    paths = locust_csv.write(result, str(tmp_path / "r"))
    header, row = Path(paths[0]).read_text().splitlines()[:2]
    assert header.split(",")[11:] == columns
    values = [float(v) for v in row.split(",")[11:]]
    assert 250 <= values[0] <= 250.25 and 333 <= values[1] <= 333.4 and 500 <= values[2] <= 500.5, values
    assert values[3] == 1000.0 and row.split(",")[4] == row.split(",")[13]  # the median column stays
    history = Path(paths[1]).read_text().splitlines()
    assert history[0].split(",")[6:10] == columns and all(len(r.split(",")) == 17 for r in history)
    table = locust_console.percentiles_table(result["endpoints"], result["aggregate"]).splitlines()
    assert table[1].split()[2:] == [*columns, "#", "reqs"]
    assert table[3].split()[2:] == ["250", "333", "500", "1000", "1000"]
    monkeypatch.setattr(stats, "PERCENTILES_TO_REPORT", [0.5, 0.66, 0.75, 0.8, 0.9, 0.95, 0.98, 0.99, 0.999, 0.9999, 1])
    assert locust_csv.stats_header() == locust_csv.STATS_HEADER  # Locust's default: its 11, as before


@pytest.mark.parametrize(
    "setting, value, message",
    [
        ("PERCENTILES_TO_CHART", [0.1] * 7, "stats.PERCENTILES_TO_CHART parameter should be a maximum of 6 parameters"),
        ("PERCENTILES_TO_CHART", [1.0], "stats.PERCENTILES_TO_CHART parameter need to be float and value between."),
        ("PERCENTILES_TO_STATISTICS", ["x"], "stats.PERCENTILES_TO_STATISTICS parameter need to be float and"),
        ("PERCENTILES_TO_REPORT", [95], "stats.PERCENTILES_TO_REPORT parameter need to be a list of floats"),
        ("PERCENTILES_TO_REPORT", [], "stats.PERCENTILES_TO_REPORT parameter need to be a list of floats"),
    ],
)
def test_percentile_settings_are_checked_as_locust_checks_them(monkeypatch, capsys, setting, value, message):
    """Locust's validate_stats_configuration (locust/stats.py): exit 1 and its message; squall checks
    the reported percentiles too."""
    from squall import stats

    stats.validate_stats_configuration()  # the defaults pass
    monkeypatch.setattr(stats, setting, value)
    with pytest.raises(SystemExit) as exit_:
        stats.validate_stats_configuration()
    assert exit_.value.code == 1 and capsys.readouterr().err.startswith(message)

"""The pure parts of the dashboard and the reports: what they show, hide and refuse."""

import json
import re

import pytest

from squall.commands.report import compare_table
from squall.web import live, page
from squall.web.controls import validate as _validate
from squall.web.metrics import prometheus
from squall.web.server import LiveStore


def endpoint(method, name, requests, failures=0, p50=1000, p95=2000, mean=1200.0):
    return {
        "method": method,
        "name": name,
        "requests": requests,
        "failures": failures,
        "body_bytes": 0,
        "wire_bytes": 0,
        "min_us": 100,
        "max_us": 9000,
        "mean_us": mean,
        "stdev_us": 1.0,
        "percentiles_us": {"50": p50, "95": p95, "99": p95 * 2, "100": 9000},
        "status_codes": {"200": requests - failures},
        "buckets": [[1000, 10], [5000, 90], [10000, 100]],
    }


def result(requests=100, duration=10.0, p95=2000):
    e = endpoint("GET", "/a", requests, p95=p95)
    return {
        "kind": "http",
        "url": "http://x/",
        "duration_s": duration,
        "aggregate": dict(e, method="", name="Aggregated"),
        "endpoints": [e],
        "timeseries": [],
    }


def test_secrets_never_reach_the_page():
    argv = [
        "mqtt", "--password", "hunter2", "--web-auth=me:pw", "-H", "Authorization: Bearer abc",
        "-H", "X-Trace: 1", "http://user:pass@host/x",
    ]  # fmt: skip
    shown = page.redact_argv(argv)
    assert shown == [
        "mqtt", "--password", "***", "--web-auth=***", "-H", "Authorization: ***",
        "-H", "X-Trace: 1", "http://user:***@host/x",
    ]  # fmt: skip
    line = page.meta("bench", argv, "http://user:pass@host/")["command_line"]
    assert "hunter2" not in line and "pass@" not in line and "abc" not in line


def test_data_inside_the_script_element_cannot_close_it():
    text = page._script_safe(page.to_json({"name": "</script><script>alert(1)</script><!--", "x": float("nan")}))
    assert "<" not in text and ">" not in text
    assert json.loads(text) == {"name": "</script><script>alert(1)</script><!--", "x": None}
    # The dashboard's report: its seconds come as JSON text, spliced in, and are made safe all the same.
    hostile = result()
    hostile["timeseries"] = [{"t": 0, "endpoints": [{"name": "</script><!--"}]}]
    html = page.report_of_json(page.to_json(hostile), dict(hostile, timeseries=[]), page.meta("bench", [], "x"))
    data = html.split('<script id="squall-data" type="application/json">', 1)[1].split("</script>", 1)[0]
    assert json.loads(data)["result"] == json.loads(page.to_json(hostile))


def test_controls_accept_only_sane_commands():
    assert _validate("start", {"users": "5", "spawn_rate": 2, "host": "https://h"}, "ready") == {
        "users": 5,
        "spawn_rate": 2.0,
        "host": "https://h",
    }
    for body, state in (
        ({"users": 0, "spawn_rate": 1}, "ready"),  # at least one user to start
        ({"users": 1, "spawn_rate": 0}, "ready"),
        ({"users": 1, "spawn_rate": 1, "host": "file:///etc/passwd"}, "ready"),
        ({"users": 1, "spawn_rate": 1}, "running"),  # started already
    ):
        with pytest.raises(ValueError):
            _validate("start", body, state)
    assert _validate("users", {"users": 0, "spawn_rate": 1}, "running")["users"] == 0
    with pytest.raises(ValueError):
        _validate("users", {"users": 3, "spawn_rate": 1}, "ready")
    # A User class without a host: the form must give one (Locust would start, and stop at once).
    hostless = {"host_required": "Steady"}
    with pytest.raises(ValueError, match="Steady has no host"):
        _validate("start", {"users": 1, "spawn_rate": 1, "host": " "}, "ready", hostless)
    assert (
        _validate("start", {"users": 1, "spawn_rate": 1, "host": "http://h"}, "stopped", hostless)["host"] == "http://h"
    )


def test_a_start_is_taken_once_and_a_new_test_starts_the_page_over():
    store = LiveStore(page.meta("run", [], ""), "http")
    assert not store.take_start()  # not waiting for one
    store.set(startable=True)
    assert store.take_start() and not store.take_start()  # a double click starts one test
    totals = {"aggregate": endpoint("", "Aggregated", 3), "endpoints": [], "errors": []}
    store.publish({"cursor": 1, "timeseries": [{"t": 0, "unix": 5.0}], "totals": totals}, users=4)
    store.finish({"done": True})
    store.begin_test(host="http://h", spawn_rate=2.0, state="spawning")
    v = store.view(1)
    assert (v["test"], v["finished"], v["cursor"], v["users"], v["host"], v["spawn_rate"]) == (
        1,
        False,
        0,
        0,
        "http://h",
        2.0,
    )
    assert v["totals"]["aggregate"] is None and v["state"] == "spawning" and not v["startable"]


def test_the_store_hands_each_client_the_seconds_it_has_not_seen():
    store = LiveStore(page.meta("bench", [], "http://x/"), "http")
    totals = {"aggregate": endpoint("", "Aggregated", 3), "endpoints": [], "errors": []}
    store.publish(
        {"cursor": 2, "timeseries": [{"t": 0, "unix": 5.0}, {"t": 1, "unix": 6.0}], "totals": totals}, users=4
    )
    store.publish({"cursor": 3, "timeseries": [{"t": 2, "unix": 7.0}], "totals": totals})
    v = store.view(1)
    assert [p["t"] for p in v["timeseries"]] == [1, 2] and v["cursor"] == 3 and v["users"] == 4
    assert store.view(99)["timeseries"] == [] and store.view(-5)["cursor"] == 3
    assert store.current_result()["stop_reason"] == "running"
    store.finish({"done": True})
    assert store.view(3)["finished"] and store.current_result() == {"done": True}


def test_prometheus_text_is_well_formed():
    r = result()
    r["endpoints"].append(endpoint("POST", 'say "hi"\\n', 5, failures=1))
    text = prometheus(r, {"users": 7}, "http")
    sample = re.compile(r'^[a-z_]+(\{([a-z_]+="([^"\\]|\\.)*",?)*\})? -?[0-9.e+]+$')
    for line in text.splitlines():
        assert line.startswith("# ") or sample.match(line), line
    assert 'squall_requests_total{method="GET",name="/a"} 100' in text
    assert 'squall_failures_total{method="POST",name="say \\"hi\\"\\\\n"} 1' in text
    assert 'squall_response_time_percentile_seconds{method="GET",name="/a",quantile="0.95"} 0.002000' in text
    assert 'squall_response_time_seconds_bucket{method="GET",name="/a",le="0.005"} 90' in text
    assert 'squall_response_time_seconds_bucket{method="GET",name="/a",le="+Inf"} 100' in text
    assert "squall_users 7" in text


def test_a_crashed_runs_partial_files_make_a_result(tmp_path):
    target = str(tmp_path / "r.json")
    partial = live.partial_files(target, "http", "http://u:secret@h/", {"model": "closed"})
    totals = {"aggregate": endpoint("", "Aggregated", 30), "endpoints": [endpoint("GET", "/", 30)], "errors": []}
    partial.add({"timeseries": [{"t": 0, "requests": 10}, {"t": 1, "requests": 20}], "totals": totals})
    with open(partial.series_path, "a") as f:
        f.write('{"t": 2, "requ')  # the line being written when the process was killed
    r = live.read_partial(partial.series_path)
    assert [p["t"] for p in r["timeseries"]] == [0, 1] and r["aggregate"]["requests"] == 30
    assert r["stop_reason"] == "crashed" and "secret" not in r["url"] and r["duration_s"] == 2.0
    partial.done()
    assert not list(tmp_path.iterdir())


def test_a_partial_run_killed_between_its_seconds_and_their_totals_reads_as_the_totals(tmp_path):
    """The seconds' lines go first, then the totals (replaced whole): a kill between the two leaves a
    second the totals do not hold. The report reads as far as the totals go, so its total requests and
    its chart agree (CI met the page's total 400 beside a chart of 600)."""
    target = str(tmp_path / "r.json")
    partial = live.partial_files(target, "http", "http://h/", {"model": "closed"})
    totals = {"aggregate": endpoint("", "Aggregated", 30), "endpoints": [endpoint("GET", "/", 30)], "errors": []}
    partial.add({"timeseries": [{"t": 0, "requests": 10}, {"t": 1, "requests": 20}], "totals": totals})
    partial._line({"t": 2, "requests": 40})  # the next second, its totals never written
    r = live.read_partial(partial.series_path)
    assert [p["t"] for p in r["timeseries"]] == [0, 1] and r["duration_s"] == 2.0
    assert r["aggregate"]["requests"] == sum(p["requests"] for p in r["timeseries"]) == 30


def test_compare_shows_the_change_from_the_first_run():
    text = compare_table([("sync", result(100, p95=2000)), ("async", result(150, p95=1000))])
    rows = {line.split()[0]: line for line in text.splitlines() if line.strip()}
    assert "+50.0%" in rows["change"] and "-50.0%" in rows["change"]
    assert "10.0" in rows["sync"] and "15.0" in rows["async"]


def test_compare_gives_the_error_rates_change_in_points_and_only_from_the_first_run():
    """5% failed, then 9.95%: +4.95 pp, as the page says (it read +98.9%); an endpoint the first run
    lacks has no change row (it was "from the second run", under a header saying the first)."""
    first, second = result(2000), result(2000)
    first["endpoints"][0]["failures"] = first["aggregate"]["failures"] = 100
    second["endpoints"][0]["failures"] = second["aggregate"]["failures"] = 199
    extra = dict(second["endpoints"][0], name="/b")
    third = {**second, "endpoints": [*second["endpoints"], extra]}
    text = compare_table([("one", first), ("two", second), ("three", third)])
    assert "+4.95 pp" in text and "98.9" not in text
    b = text.split("GET /b")[1].split("\n\n")[0]
    assert "change" not in b, b


def test_the_downloads_of_a_test_that_has_counted_nothing_yet():
    """Found by tests/test_web_fuzz.py: a download between a Start and the test's first second was a 500
    (KeyError 'percentiles_us': the run so far had an aggregate of two fields)."""
    from squall.report import locust_csv

    store = LiveStore(page.meta("run", [], "http://h"), "http")
    store.begin_test(host="http://h", spawn_rate=1.0, state="spawning")
    so_far = store.current_result()
    assert ",Aggregated,0,0," in locust_csv.stats_csv(so_far)
    assert locust_csv.failures_csv(so_far) and locust_csv.exceptions_csv(so_far)
    assert "squall-data" in page.report(so_far, store.meta)


def test_a_command_is_answered_once_the_run_obeyed_it():
    """The server's handler waits for the driving thread to take and do its command (a Reset then shows
    in what the page reads next); with no test running, nothing waits."""
    import threading
    import time

    from squall.web.server import Dashboard

    store = LiveStore({"controls": {}}, "http")
    dashboard = Dashboard(store, "127.0.0.1", 0)
    try:
        store.state = "running"
        done = []

        def run_loop():  # the driving thread's pass, 0.2 s after the command came
            time.sleep(0.2)
            for action, _ in dashboard.take_commands():
                done.append(action)
            dashboard.obeyed()

        first = dashboard.put_command("reset", {})
        loop = threading.Thread(target=run_loop)
        started = time.monotonic()
        loop.start()
        assert dashboard.wait_obeyed(first) and done == ["reset"]
        assert time.monotonic() - started >= 0.2
        loop.join()
        second = dashboard.put_command("stop", {})
        assert second == first + 1
        assert not dashboard.wait_obeyed(second, timeout=0.05)  # nobody took it: answered anyway
        store.state = "stopped"
        started = time.monotonic()
        assert not dashboard.wait_obeyed(second, timeout=5) and time.monotonic() - started < 1
    finally:
        dashboard.server.server_close()


def test_locusts_index_html_is_the_dashboards_page_with_the_tabs_a_route_adds():
    """`render_template("index.html", ...)` in a locustfile's route (Locust's extend_web_ui.py) is the
    dashboard's page, given the tabs, table columns and CSV files of Locust's `template_args`, passed as
    one (`template_args=`) or spread (older files); a CSV link that is not a web address or a path (a
    `javascript:` one, even disguised with a tab) is left out; a page with nothing added has nothing."""
    from flask import render_template

    from squall.web.flask_app import LocustFlask, extension_of

    class Dashboard:
        def live_page(self, extension=None):
            return "<page>" + json.dumps(extension) + "</page>"

    web = LocustFlask(None, Dashboard(), web_login=False)  # type: ignore[arg-type]
    args = {
        "host": "http://x",
        "extended_tabs": [{"title": "Lengths", "key": "len"}, {"key": "bare"}, {"title": "no key"}],
        "extended_tables": [{"key": "len", "structure": [{"key": "name", "title": "Name"}, {"key": "n"}]}],
        "extended_csv_files": [
            {"href": "/len/csv", "title": "CSV"},
            {"href": "https://example.test/a.csv"},
            {"href": "javascript:alert(1)", "title": "x"},
            {"href": "java\tscript:alert(1)", "title": "y"},
        ],
    }
    web.app.add_url_rule("/given", "given", lambda: render_template("index.html", template_args=args))
    web.app.add_url_rule("/spread", "spread", lambda: render_template("index.html", **args))
    web.app.add_url_rule("/plain", "plain", lambda: render_template("index.html"))
    client = web.app.test_client()
    expected = {
        "tabs": [
            {
                "key": "len",
                "title": "Lengths",
                "columns": [{"key": "name", "title": "Name"}, {"key": "n", "title": "n"}],
            },
            {"key": "bare", "title": "bare", "columns": None},
        ],
        "csv_files": [
            {"href": "/len/csv", "title": "CSV"},
            {"href": "https://example.test/a.csv", "title": "https://example.test/a.csv"},
        ],
    }
    for path in ("/given", "/spread"):
        answer = client.get(path)
        assert answer.status_code == 200
        assert json.loads(answer.text.removeprefix("<page>").removesuffix("</page>")) == expected, path
    assert client.get("/plain").text == "<page>null</page>"
    assert extension_of({"extended_tabs": "not a list", "extended_csv_files": [None, 3]}) is None


def test_locusts_stats_requests_rows_follow_percentiles_to_statistics(monkeypatch):
    """Locust's `/stats/requests` rows (StatsEntry.to_dict) carry `response_time_percentile_P` for each P
    of its PERCENTILES_TO_STATISTICS, which a locustfile may set: 0.95 and 0.99 by default, here 0.7
    (from the live row's spectrum: the engine reports no 70%) and 0.95."""
    from squall import stats
    from squall.web import flask_app

    row = {"method": "GET", "name": "/a", "requests": 4, "failures": 0, "min_us": 1000, "max_us": 4000}
    row |= {"mean_us": 2500, "percentiles_us": {"50": 2000, "95": 4000, "99": 4000}}
    row["spectrum"] = [[25, 1000], [50, 2000], [75, 3000], [100, 4000]]

    def percentiles(r):
        return {k: v for k, v in flask_app._entry(r, {}, 1.0).items() if k.startswith("response_time_percentile")}

    assert percentiles(row) == {"response_time_percentile_0.95": 4.0, "response_time_percentile_0.99": 4.0}
    monkeypatch.setattr(stats, "PERCENTILES_TO_STATISTICS", [0.7, 0.95])
    assert percentiles(row) == {"response_time_percentile_0.7": 3.0, "response_time_percentile_0.95": 4.0}
    empty = {**row, "requests": 0, "percentiles_us": {}}
    assert percentiles(empty) == {"response_time_percentile_0.7": 0.0, "response_time_percentile_0.95": 0.0}

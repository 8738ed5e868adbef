"""`environment.stats` and the runner's surface, from locustfiles run by squall and by Locust against the
same server: the same counts (each user makes a set number of requests: tests/locustfiles/
stats_bounded.py), the counts the server received, the same exit code from Locust's documented
`quitting` pattern, the same custom messages; percentiles against a server of known latency."""

import csv
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support import free_port, needs_locust, serving, squall, squall_process, wait_until
from web_client import control

FILES = Path(__file__).parent / "locustfiles"


def run(tool, name, host, tmp_path, *args, users=2, **env_vars):
    """`tool` ("squall" or "locust") runs locustfile `name` headless until its users are done (within
    30 s); returns (CompletedProcess, what the file wrote to $STATS_OUT or None)."""
    out = tmp_path / f"{tool}-{name}.json"
    env = dict(os.environ, STATS_OUT=str(out), USERS=str(users), **{k: str(v) for k, v in env_vars.items()})
    argv = ["-f", FILES / name, "-H", host, "--headless", "-u", users, "-r", 100, "-t", "30s", "--only-summary", *args]
    if tool == "locust":
        cmd = [sys.executable, "-m", "locust", *map(str, argv), "--loglevel", "WARNING"]
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=90)
    else:
        p = squall(*argv, env=env, timeout=90)
    return p, (json.loads(out.read_text()) if out.exists() else None)


def counts(server):
    return {k: v for k, v in server._ask("/__counts").items() if not k.startswith("/__")}


def served_since(server, before):
    now = counts(server)
    return {k: now[k] - before.get(k, 0) for k in now if now[k] != before.get(k, 0)}


@pytest.mark.parametrize("fail_every, code", [(10, 3), (200, 0)])
def test_exit_code_set_from_the_stats_in_quitting_as_locust(odd_server, tmp_path, fail_every, code):
    """Locust's documented pattern: `if environment.stats.total.fail_ratio > 0.01: process_exit_code = ...`.
    10% of failures: 3 under both; 0.5% (1 in 200): 0 under both, although requests failed (without the
    listener the exit code would be 1)."""
    needs_locust()
    for tool in ("locust", "squall"):
        before = counts(odd_server)
        p, _ = run(
            tool, "stats_exit_code.py", odd_server.url, tmp_path, REQUESTS=200, FAIL_EVERY=fail_every, JUDGED_EVERY=0
        )
        assert p.returncode == code, (tool, p.returncode, p.stderr[-2000:])
        # The decision was made on the whole load: the server got every request, and the failures.
        assert served_since(odd_server, before) == {"/ok": 400 - 400 // fail_every, "/status/500": 400 // fail_every}


def test_stats_read_in_test_stop_and_quitting_match_locust_and_the_server(odd_server, tmp_path):
    """A set number of requests (2 users x 100: 160 /ok, 20 /status/500, 20 judged failures): squall's
    stats in `test_stop` and `quitting` count what the server received and what Locust's count, field by
    field where both measure the same thing (counts, sizes, ratios, the shape of empty entries)."""
    needs_locust()
    before = counts(odd_server)
    p, theirs = run("locust", "stats_record.py", odd_server.url, tmp_path)
    assert p.returncode == 1, p.stderr[-2000:]  # requests failed, no listener sets the exit code
    before = counts(odd_server)
    p, ours = run("squall", "stats_record.py", odd_server.url, tmp_path)
    assert p.returncode == 1, p.stderr[-2000:]
    assert served_since(odd_server, before) == {"/ok": 180, "/status/500": 20}  # /ok includes "judged"

    compared = ["num_requests", "num_none_requests", "num_failures", "fail_ratio", "total_content_length"]
    compared += ["avg_content_length", "response_times_count", "reqs_per_sec_count"]
    for phase in ("test_stop", "quitting"):
        mine, locust = ours[phase], theirs[phase]
        assert (
            set(mine["entries"])
            == set(locust["entries"])
            == {"GET /ok", "GET /status/500", "GET judged"}
            | (
                {"GET never"} if phase == "quitting" else set()  # test_stop's stats.get() made it, in both
            )
        )
        assert (
            (mine["num_requests"], mine["num_failures"])
            == (locust["num_requests"], locust["num_failures"])
            == (
                200,
                40,
            )
        )
        for key, entry in locust["entries"].items():
            assert {k: mine["entries"][key][k] for k in compared} == {k: entry[k] for k in compared}, key
            assert mine["entries"][key]["serialize_keys"] == entry["serialize_keys"]
            assert list(mine["entries"][key]["to_dict"]) == list(entry["to_dict"])
        assert {k: mine["total"][k] for k in compared} == {k: locust["total"][k] for k in compared}
        # An entry without requests answers as Locust's does (times and rates aside).
        empty = ["num_requests", "num_failures", "fail_ratio", "min_response_time", "max_response_time"]
        empty += ["median_response_time", "percentiles", "avg_response_time", "avg_content_length"]
        empty += ["last_request_timestamp", "total_rps", "current_rps"]
        assert {k: mine["missing"][k] for k in empty} == {k: locust["missing"][k] for k in empty}
        assert mine["missing"]["to_dict"] == locust["missing"]["to_dict"]
        # Errors: the same kinds, occurrences and text (Locust's: the repr of its exception).
        assert [(e["method"], e["name"], e["occurrences"], e["error"]) for e in mine["errors"]] == [
            (e["method"], e["name"], e["occurrences"], e["error"]) for e in locust["errors"]
        ]
        assert all(e["seen_times_plausible"] for e in mine["errors"])
        assert mine["runner_stats_is_stats"] and mine["get_is_entry"]
        # Times: every request took some time, the median is within [min, max], p100 is the max.
        for entry in mine["entries"].values():
            if entry["num_requests"]:
                assert 0 < entry["min_response_time"] <= entry["median_response_time"] <= entry["max_response_time"]
                assert entry["percentiles"]["1.0"] == entry["max_response_time"]
                assert entry["total_rps"] > 0 and entry["start_time"] <= entry["last_request_timestamp"]
    # What test_stop read is what the run ended with: the engine published the last second first.
    for key, entry in ours["test_stop"]["entries"].items():
        exact = ours["quitting"]["entries"][key]
        assert {k: entry[k] for k in compared} == {k: exact[k] for k in compared}
    assert ours["states"]["test_stop"] == ours["states"]["quitting"] == "stopped" == theirs["states"]["test_stop"]
    assert ours["states"]["request"] in ("spawning", "running")


@pytest.fixture(scope="module")
def delay_server():
    """tests/servers/delay_server.py: every answer after exactly 20 ms (in a process of its own)."""
    with serving("delay_server.py", 20) as port:
        yield f"http://127.0.0.1:{port}"


@pytest.mark.serial  # a median within 1 ms of the server's delay: a neighbour's load would move it
def test_percentiles_of_a_server_of_known_latency(delay_server, tmp_path):
    """Every answer takes the server's 20 ms (plus loopback and scheduling, well under 1 ms at the median
    on an idle machine; a busy 2-core one adds tail). The stats' percentiles are HDR's: within 0.1% of a
    recorded time, so the median is in [20, 21] ms; in test_stop (live totals) they equal those in
    quitting (the histograms) at Locust's reported percentiles, and are never below them elsewhere."""
    p, ours = run("squall", "stats_record.py", delay_server, tmp_path, REQUESTS=50, FAIL_EVERY=0, JUDGED_EVERY=0)
    assert p.returncode == 0, p.stderr[-2000:]
    stop, end = ours["test_stop"]["entries"]["GET /ok"], ours["quitting"]["entries"]["GET /ok"]
    assert end["num_requests"] == 100
    assert end["min_response_time"] >= 20.0
    assert 20.0 <= end["median_response_time"] == end["percentiles"]["0.5"] <= 21.0, end["percentiles"]
    assert 20.0 <= end["percentiles"]["0.95"] <= end["max_response_time"]
    assert end["avg_response_time"] == pytest.approx(end["total_response_time"] / 100)
    for q in ("0.5", "0.9", "0.95", "0.99", "1.0"):
        assert stop["percentiles"][q] == end["percentiles"][q], q
    assert stop["percentiles"]["0.97"] >= end["percentiles"]["0.97"]


def test_runner_surface_and_custom_messages_match_locust(odd_server, tmp_path):
    """STATE_* constants, runner.state and user_count from tasks, register_message/send_message delivered
    locally (the listener gets environment= and msg= with .type, .data, .node_id "local"), the error
    for a second listener, the warning for an unknown type, web_ui None when headless: all as Locust."""
    needs_locust()
    p, theirs = run("locust", "runners_messages.py", odd_server.url, tmp_path, users=1)
    assert p.returncode == 0, p.stderr[-2000:]
    warning = "WARNING/locust.runners: Unknown message type received: nobody listens"
    assert warning in p.stderr
    p, ours = run("squall", "runners_messages.py", odd_server.url, tmp_path, users=1)
    assert p.returncode == 0, p.stderr[-2000:]
    assert warning in p.stderr
    assert ours == theirs
    assert len(ours["received"]) == 4 and ours["quitting_state"] == "stopped"


@pytest.mark.slow
def test_a_route_added_to_the_dashboard_is_served(odd_server, tmp_path):
    """`environment.web_ui.app.route(...)` (Locust's documented way to add a page): the page is served
    beside the dashboard, by the locustfile's Flask app, while the run goes on; headless, web_ui is None
    and the file runs. (tests/test_locust_web_ui.py runs Locust's examples that do this beside Locust.)"""
    import urllib.request

    port = free_port()
    args = ("--autostart", "--autoquit", "0", "--web-port", port)
    proc = squall_process("-f", FILES / "runners_web_ui.py", "-H", odd_server.url, "-u", 1, "-t", "3s", *args)

    def page():
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/added_page", timeout=5) as r:
                return r.status, r.read()
        except OSError:
            return None

    wait_until(lambda: page() is not None, "the added page", proc)
    assert page() == (200, b"Another page")
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 0, stderr[-2000:]
    p = squall("-f", FILES / "runners_web_ui.py", "-H", odd_server.url, "-u", 1, "-t", "1s", "--headless")
    assert p.returncode == 0, p.stderr[-2000:]


@pytest.mark.slow
def test_reset_from_the_dashboard_resets_environment_stats(odd_server, tmp_path):
    """The dashboard's Reset (and --reset-stats) go through `environment.stats.reset_all()`, as Locust's
    do: from then on (the next second's start) the stats count what came after, in `quitting` and in
    the files written at the end too (Locust's files are its stats): what the server received after
    the reset, less the rest of the reset's second and the requests the end of the run cancelled (at
    most one per user), and less than all."""
    port = free_port()
    out, result = tmp_path / "stats.json", tmp_path / "whole"  # --json-file NAME writes NAME.json, as Locust
    env = dict(os.environ, STATS_OUT=str(out), REQUESTS="100000", WAIT="0.01", FAIL_EVERY="0", JUDGED_EVERY="0")
    args = ["-f", FILES / "stats_record.py", "-H", odd_server.url, "-u", 2, "-r", 100, "-t", "4s", "--autostart"]
    proc = squall_process(*args, "--autoquit", 0, "--web-port", port, "--json-file", result, env=env)
    wait_until(lambda: odd_server.served() > 0, "requests", proc)
    time.sleep(2.5)  # seconds 0 and 1 of the run published: the reset has something to clear
    assert control(port, "reset") == (200, {"ok": True})  # as the page sends it (the JSON type, the token)
    served_at_reset = odd_server.served()
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 0, stderr[-2000:]
    served = odd_server.served()
    ours = json.loads(out.read_text())
    counted = ours["quitting"]["num_requests"]
    per_second = served / 4  # the run's mean rate (-t 4s)
    # The POST is answered once the run's loop did the reset, which counts from the start of the next
    # second: every request the server saw after the answer is counted, but those of the rest of that
    # second (at most a second's worth of this load) and those the end of the run cancelled (one per
    # user at most).
    after = served - served_at_reset
    assert after - per_second - 2 <= counted <= after, (served, served_at_reset, counted)
    assert counted < served - 50
    # test_stop reads the live totals, which count the same seconds once published: the last one may
    # not be yet (at most a second's worth).
    assert counted - per_second <= ours["test_stop"]["num_requests"] <= counted
    written = sum(row["num_requests"] for row in json.loads((tmp_path / "whole.json").read_text()))
    assert written == counted


def test_percentiles_to_report_set_by_the_file_as_locust(tmp_path):
    """tests/locustfiles/stats_percentiles.py sets PERCENTILES_TO_REPORT to [0.25, 0.5, 0.75, 1.0]:
    Locust and squall write those four columns in the stats CSV, the history CSV and the console's
    percentile table (squall wrote its 11). Against servers of known latency (10 answers after 20 ms, 10
    after 60 ms) the 25th percentile is a fast one and the 75th a slow one under both (squall's exact,
    from the histogram: the engine reports neither)."""
    needs_locust()
    with serving("delay_server.py", 20) as fast, serving("delay_server.py", 60) as slow:
        env = dict(os.environ, SLOW_URL=f"http://127.0.0.1:{slow}/")
        tables = {}
        for tool in ("locust", "squall"):
            prefix = tmp_path / tool
            argv = ["-f", FILES / "stats_percentiles.py", "-H", f"http://127.0.0.1:{fast}", "--headless"]
            argv += ["-u", 1, "-r", 10, "-t", "4s", "--csv", prefix]
            if tool == "locust":
                cmd = [sys.executable, "-m", "locust", *map(str, argv)]
                p = subprocess.run(cmd, capture_output=True, text=True, timeout=90, env=env)
            else:
                p = squall(*argv, timeout=90, env=env)
            assert p.returncode == 0, (tool, p.stderr[-2000:])
            stats = list(csv.DictReader(open(f"{prefix}_stats.csv")))
            history = open(f"{prefix}_stats_history.csv").readline().strip().split(",")
            lines = p.stderr.splitlines()
            head = lines[max(i for i, line in enumerate(lines) if line.startswith("Response time percentiles")) + 1]
            tables[tool] = (list(stats[0])[11:], history[6:10], head.split()[2:])
            row = {r["Name"]: r for r in stats}["/delay"]
            assert row["Request Count"] == "20", (tool, row)
            assert 20 <= float(row["25%"]) < 30 and 60 <= float(row["75%"]) < 70, (tool, row)
    columns = ["25%", "50%", "75%", "100%"]
    assert tables["squall"] == tables["locust"] == (columns, columns, [*columns, "#", "reqs"]), tables

"""Locustfiles run unchanged by `squall -f`, against a real server on loopback."""

import csv
import json
import math
import os
import re
import signal
import time
from pathlib import Path

import pytest

from support import OddServer, needs_locust, squall, squall_get, squall_process, wait_until
from test_web import open_page

FILES = Path(__file__).parent / "locustfiles"


def run_file(name, server, tmp_path, *args, users=1, rate=100, run_time="2s", expect=0, stop_after=0):
    """`stop_after`: the run ends after that many requests (per process), for files importing stop_after."""
    prefix = tmp_path / "out"
    env = dict(os.environ, SQUALL_TEST_OUT=str(tmp_path / "seen.json"), STOP_AFTER_REQUESTS=str(stop_after))
    p = squall(
        "-f",
        FILES / name,
        "-H",
        server.url,
        "--headless",
        "-u",
        users,
        "-r",
        rate,
        "-t",
        run_time,
        "--csv",
        prefix,
        *args,
        env=env,
        timeout=90,
    )
    assert p.returncode == expect, (p.returncode, p.stdout[-3000:], p.stderr[-3000:])
    return p, prefix


def stats(prefix):
    rows = list(csv.DictReader(open(f"{prefix}_stats.csv")))
    return {r["Name"]: r for r in rows}


def exceptions(prefix):
    return list(csv.DictReader(open(f"{prefix}_exceptions.csv")))


def assert_share(part, total, expected, sigmas=5):
    """`part` is `expected` of `total` within `sigmas` standard deviations of a binomial share, so
    that a short run on a starved host only widens the bound."""
    assert total > 0
    tolerance = sigmas * (expected * (1 - expected) / total) ** 0.5
    assert abs(part / total - expected) <= tolerance, (part, total, expected)


def test_task_weights_hold(odd_server, tmp_path):
    p, prefix = run_file("weights.py", odd_server, tmp_path, users=4, run_time="60s", stop_after=20_000)
    s = stats(prefix)
    heavy, light = int(s["heavy"]["Request Count"]), int(s["light"]["Request Count"])
    assert heavy + light >= 20_000
    assert_share(heavy, heavy + light, 0.75)  # within 0.015 at 20,000 requests
    assert "Response time percentiles (exact)" in p.stderr and "Aggregated" in p.stderr and p.stdout == ""


def test_client_api(odd_server, tmp_path):
    p, prefix = run_file("client_api.py", odd_server, tmp_path, expect=1)  # two failures are on purpose
    assert exceptions(prefix) == [], exceptions(prefix)
    s = stats(prefix)
    assert s["/echo?[params]"]["Request Count"] == "1"
    assert s["renamed"]["Request Count"] == "2"
    assert s["/redirect"]["Failure Count"] == "0" and s["/redirect (not followed)"]["Failure Count"] == "0"
    assert s["expected 404"]["Failure Count"] == "0"
    assert s["judged failure"]["Failure Count"] == "1" and s["/status/500"]["Failure Count"] == "1"
    failures = {r["Name"]: r["Error"] for r in csv.DictReader(open(f"{prefix}_failures.csv"))}
    assert failures["judged failure"] == "CatchResponseError('not what we wanted')"  # Locust's text


def test_tasksets_interrupts_exceptions_and_events(odd_server, tmp_path):
    p, prefix = run_file("flow.py", odd_server, tmp_path, users=2, expect=1)  # the task bug is an exception
    out = json.loads((tmp_path / "seen.json").read_text())
    seen, order = out["seen"], out["order"]
    for event in ("init", "test_start", "test_stop", "quitting"):
        assert seen[event] == 1, event
    assert seen["user_start"] == 2 and seen["user_stop"] == 2
    assert seen["steps_start"] >= 1 and seen["steps_stop"] >= 1 and seen["inner"] >= 1
    assert seen["reschedule"] >= 1 and seen["broken"] >= 1
    assert order and all(steps[:3] == [1, 2, 3] for steps in order), order
    # Every request event is in the stats. A request still in flight when the run ends is measured by
    # the engine, but its user is gone before the event fires: at most one per user.
    assert 0 <= int(stats(prefix)["Aggregated"]["Request Count"]) - seen["request"] <= 2
    errors = exceptions(prefix)
    assert len(errors) == 1 and "a task bug" in errors[0]["Message"] and "flow.py" in errors[0]["Traceback"]
    assert int(errors[0]["Count"]) == seen["broken"]


@pytest.mark.slow
def test_load_test_shape_sets_the_users(odd_server, tmp_path):
    p, prefix = run_file("shape.py", odd_server, tmp_path, run_time="20s")
    peaks = json.loads((tmp_path / "seen.json").read_text())["peaks"]
    assert 2 in peaks and 4 in peaks and max(peaks) == 4
    history = list(csv.DictReader(open(f"{prefix}_stats_history.csv")))
    assert len(history) < 8  # tick() returned None after 3 s, well before -t 20s


def test_stopped_users_close_their_connections(odd_server, tmp_path):
    """A shape that ramps down from 8 users to 2 leaves 2 connections open, not 8: a stopped user's
    keep-alive connection closes with it, as in Locust."""
    proc = squall_process(
        "-f", FILES / "ramp_down.py", "-H", odd_server.url, "--headless", "-t", "60s", "--only-summary"
    )
    try:
        wait_until(lambda: odd_server.open_connections() == 8, "8 users connected", proc)
        wait_until(lambda: odd_server.open_connections() == 2, "ramp-down to 2 connections", proc)
    finally:
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 0, stderr  # Locust's code: Ctrl-C does not change it


@pytest.mark.parametrize(
    "args, names",
    [
        (["-T", "read"], {"read"}),
        (["-E", "slow"], {"read", "untagged"}),
        (["-T", "read", "write", "-E", "slow"], {"read"}),
    ],
)
def test_tags_select_tasks(odd_server, tmp_path, args, names):
    _, prefix = run_file("tags.py", odd_server, tmp_path, *args, run_time="1s")
    assert set(stats(prefix)) - {"Aggregated"} == names


def test_graphql(odd_server, tmp_path):
    _, prefix = run_file("graphql.py", odd_server, tmp_path, expect=1)
    s = stats(prefix)
    assert s["GQL getBaseMetrics"]["Failure Count"] == "0"
    assert s["GQL brokenQuery"]["Failure Count"] == s["GQL brokenQuery"]["Request Count"] != "0"
    assert s["GQL tolerated"]["Failure Count"] == "0"
    failures = {r["Name"]: r["Error"] for r in csv.DictReader(open(f"{prefix}_failures.csv"))}
    assert failures["GQL brokenQuery"] == "CatchResponseError(\"GraphQL error: Cannot query field 'broken'\")"
    assert exceptions(prefix) == []


@pytest.mark.slow
def test_wait_times(odd_server, tmp_path):
    _, prefix = run_file("wait_times.py", odd_server, tmp_path, users=3, run_time="4s")
    s = stats(prefix)
    assert 7 <= int(s["paced"]["Request Count"]) <= 9  # every 0.5 s for 4 s
    assert 15 <= int(s["throughput"]["Request Count"]) <= 17  # 4 per second
    assert 13 <= int(s["between"]["Request Count"]) <= 21  # 0.2-0.3 s apart


def test_user_class_selection_and_list(odd_server, tmp_path):
    p = squall("-f", FILES / "wait_times.py", "--list")
    assert p.returncode == 0 and p.stdout.split() == ["Paced", "Throughput", "Between"]
    _, prefix = run_file("wait_times.py", odd_server, tmp_path, "Paced", run_time="1s")
    assert set(stats(prefix)) == {"paced", "Aggregated"}


@pytest.mark.slow
def test_exit_codes(odd_server, tmp_path):
    run_file("exit_code.py", odd_server, tmp_path, expect=7)  # environment.process_exit_code wins
    run_file("weights.py", odd_server, tmp_path, "--exit-code-on-error", "3", run_time="1s")  # no failures: 0
    run_file("graphql.py", odd_server, tmp_path, "--exit-code-on-error", "3", run_time="1s", expect=3)


@pytest.mark.parametrize(
    "name, needle",
    [
        ("syntax_error.py", "syntax_error.py:6: syntax error"),
        ("import_error.py", "import_error.py:3: ModuleNotFoundError"),
        ("no_users.py", "no User class"),
        ("missing.py", "not found"),
    ],
)
def test_bad_locustfiles_exit_2_with_file_and_line(name, needle):
    p = squall("-f", FILES / name, "--headless", "-t", "1s")
    assert p.returncode == 2 and needle in p.stderr, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr


def test_bad_arguments_exit_2(odd_server):
    p = squall("-f", FILES / "weights.py", "-H", odd_server.url, "-t", "soon")
    assert p.returncode == 2 and "invalid duration" in p.stderr
    p = squall("-f", FILES / "weights.py", "-H", odd_server.url, "Nobody")
    assert p.returncode == 2 and "unknown User class Nobody" in p.stderr


def test_exception_in_on_start_is_reported(odd_server, tmp_path):
    p, prefix = run_file("on_start_error.py", odd_server, tmp_path, users=2, run_time="1s", expect=1)
    errors = exceptions(prefix)
    assert errors and "login failed" in errors[0]["Message"] and errors[0]["Count"] == "2"


def test_ctrl_c_still_writes_csv(odd_server, tmp_path):
    prefix = tmp_path / "c"
    proc = squall_process(
        "-f", FILES / "weights.py", "-H", odd_server.url, "--headless", "-u", 2, "-t", "60s", "--csv", prefix
    )
    wait_until(lambda: odd_server.served() > 0, "requests", proc)
    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=20)
    assert proc.returncode == 0, stderr  # Locust's code: Ctrl-C does not change it
    assert "Response time percentiles" in stderr
    assert int(stats(prefix)["Aggregated"]["Request Count"]) > 0


def test_squall_exports_the_api():
    import squall

    for name in (
        "HttpUser",
        "FastHttpUser",
        "TaskSet",
        "SequentialTaskSet",
        "task",
        "tag",
        "between",
        "constant",
        "constant_pacing",
        "constant_throughput",
        "events",
        "LoadTestShape",
    ):
        assert hasattr(squall, name), name


@pytest.mark.slow
def test_time_sleep_is_cooperative_and_a_spinning_task_is_ended(odd_server, tmp_path):
    # The spinner holds the interpreter from its first request until it is ended (10 s); the run ends
    # after 31 requests, so the sleepers must go on after that.
    t0 = time.monotonic()
    p, prefix = run_file("hangs.py", odd_server, tmp_path, users=4, run_time="60s", stop_after=31, expect=1)
    assert time.monotonic() - t0 < 40
    s = stats(prefix)
    assert s["before spin"]["Request Count"] == "1" and int(s["after nap"]["Request Count"]) >= 30
    errors = exceptions(prefix)
    assert len(errors) == 1 and "without yielding" in errors[0]["Message"]
    assert "hangs.py" in errors[0]["Traceback"], errors[0]["Traceback"]
    # Cooperative: naps of different users overlap in time, which a blocking sleep cannot do.
    naps = json.loads((tmp_path / "seen.json").read_text())["naps"]
    assert any(u != v and s1 < e2 and s2 < e1 for u, s1, e1 in naps for v, s2, e2 in naps), naps


@pytest.mark.slow
def test_config_sources_and_their_precedence(odd_server, tmp_path):
    """pyproject [tool.locust] < locust.conf < --config < LOCUST_* < command line."""
    (tmp_path / "pyproject.toml").write_text('[tool.locust]\nusers = 2\nrun-time = "30s"\n')
    (tmp_path / "locust.conf").write_text(f"users = 3\nheadless = true\nhost = {odd_server.url}\nrun-time = 20s\n")
    (tmp_path / "extra.conf").write_text("run-time = 10s\nspawn-rate = 50\n")
    env = dict(os.environ, LOCUST_RUN_TIME="2s", LOCUST_LOCUSTFILE=str(FILES / "weights.py"), HOME=str(tmp_path))

    def users_seen(*args):
        p = squall("--config", "extra.conf", "--csv", "out", *args, cwd=tmp_path, env=env, timeout=60)
        assert p.returncode == 0, p.stderr
        history = list(csv.DictReader(open(tmp_path / "out_stats_history.csv")))
        return max(int(h["User Count"]) for h in history), len(history)

    users, seconds = users_seen()
    assert users == 3 and seconds <= 3  # locust.conf's users; the environment's 2 s run time
    users, _ = users_seen("-u", "4")
    assert users == 4  # the command line wins
    p = squall("--config", "missing.conf", cwd=tmp_path, env=env)
    assert p.returncode == 2 and "config file 'missing.conf' not found" in p.stderr


def test_html_report(odd_server, tmp_path):
    run_file("graphql.py", odd_server, tmp_path, "--html", tmp_path / "report_{u}.html", run_time="1s", expect=1)
    page = (tmp_path / "report_1.html").read_text()
    assert page.startswith("<!doctype html>")
    # The page draws itself from the result inlined in it (tests/test_web.py checks the drawing).
    data = json.loads(re.search(r'<script id="squall-data" type="application/json">(.*?)</script>', page, re.S)[1])
    assert data["mode"] == "report" and data["result"]["exceptions"] == []
    assert "GQL getBaseMetrics" in [e["name"] for e in data["result"]["endpoints"]]
    assert "graphql.py" in data["meta"]["command_line"] and data["meta"]["title"] == "squall: graphql.py"
    assert any("Cannot query field" in e["message"] for e in data["result"]["errors"])
    # Only the page's own two scripts (its data and its code): nothing from the data became markup, and
    # nothing is loaded from anywhere.
    assert page.count("<script") == 2 and "http" not in page.split("<body>")[0].replace("http-equiv", "")


def test_locustfile_adds_its_own_options(odd_server, tmp_path):
    run_file("custom_args.py", odd_server, tmp_path, "--greeting", "bonjour", run_time="1s")
    assert json.loads((tmp_path / "seen.json").read_text()) == {"greeting": "bonjour"}


@pytest.mark.slow
def test_processes_merge_losslessly(odd_server, tmp_path):
    p, prefix = run_file(
        "weights.py",
        odd_server,
        tmp_path,
        "--processes",
        "2",
        "--result-json",
        tmp_path / "r.json",
        users=5,
        run_time="3s",
    )
    s = stats(prefix)
    heavy, light = int(s["heavy"]["Request Count"]), int(s["light"]["Request Count"])
    assert int(s["Aggregated"]["Request Count"]) == heavy + light > 100
    assert_share(heavy, heavy + light, 0.75)
    # Every request the server saw is in the merged stats, except those in flight when the run ended:
    # as in Locust, a user stopped mid-request leaves it unmeasured, and the result counts it.
    in_flight = json.loads((tmp_path / "r.json").read_text())["abandoned"]
    assert in_flight <= 5 and heavy + light <= odd_server.served() <= heavy + light + in_flight
    assert (in_flight > 0) == ("in flight when their users stopped" in p.stderr)
    # One table, the merged one, at the end: no worker prints its share's table or its exit code.
    assert p.stderr.count("Aggregated") == 2 and "Shutting down" not in p.stderr, p.stderr[-3000:]
    history = list(csv.DictReader(open(f"{prefix}_stats_history.csv")))
    assert max(int(h["User Count"]) for h in history) == 5
    assert "Response time percentiles (exact)" in p.stderr


def _mix(prefix):
    s = stats(prefix)
    total = int(s.pop("Aggregated")["Request Count"])
    return {name: int(row["Request Count"]) / total for name, row in s.items()}, total


@pytest.mark.slow
def test_request_mix_matches_locust(odd_server, tmp_path):
    """The same locustfile under Locust and under squall: both follow the mix Locust's scheduling
    implies. Per top-level pick: browse 5/10, cart 3/10, or the Reports TaskSet 2/10, which runs
    until `detail` (1 pick in 4) interrupts it: 3 summaries and 1 detail on average. So per 1.6
    requests: browse 0.5, cart 0.3, summary 0.6, detail 0.2. Two short random runs may differ by
    more than either differs from that, so each is compared with it. Each run ends after a set number
    of requests, enough for the bounds to be 5 standard deviations of a share."""
    needs_locust()
    import subprocess
    import sys

    expected = {"browse": 0.5 / 1.6, "cart": 0.3 / 1.6, "report summary": 0.6 / 1.6, "report detail": 0.2 / 1.6}
    locust_prefix = tmp_path / "locust"
    cmd = [
        sys.executable,
        "-m",
        "locust",
        "-f",
        FILES / "mix.py",
        "--headless",
        "-u",
        4,
        "-r",
        100,
        "-t",
        "60s",
        "-H",
        odd_server.url,
        "--csv",
        locust_prefix,
        "--only-summary",
        "--loglevel",
        "ERROR",
    ]
    env = dict(os.environ, STOP_AFTER_REQUESTS="2500")
    p = subprocess.run(list(map(str, cmd)), capture_output=True, text=True, timeout=90, env=env)
    assert p.returncode == 0, p.stderr[-2000:]
    _, squall_prefix = run_file("mix.py", odd_server, tmp_path, users=4, run_time="60s", stop_after=6000)
    theirs, n_theirs = _mix(locust_prefix)
    ours, n_ours = _mix(squall_prefix)
    assert n_theirs >= 1500 and n_ours >= 6000  # Locust's CSV leaves out some requests made as it quits
    assert set(theirs) == set(ours) == set(expected)
    for name, share in expected.items():
        assert abs(ours[name] - share) < 0.04, (name, ours, n_ours)
        assert abs(theirs[name] - share) < 0.08, (name, theirs, n_theirs)


def test_user_class_weights_and_fixed_count(odd_server, tmp_path):
    run_file("classes.py", odd_server, tmp_path, users=9, run_time="2s")
    started = json.loads((tmp_path / "seen.json").read_text())
    assert started == {"Admin": 1, "Heavy": 6, "Light": 2}, started


def test_run_single_user(odd_server):
    import subprocess
    import sys

    p = subprocess.run(
        [sys.executable, str(FILES / "single_user.py"), odd_server.url], capture_output=True, text=True, timeout=30
    )
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["status", "200"] * 3


@pytest.mark.slow
@pytest.mark.parametrize("stop_timeout, finish", [("0", False), ("5s", True)])
def test_stop_timeout_lets_tasks_finish(odd_server, tmp_path, stop_timeout, finish):
    # -t 2s: each user is 0.5 s into its second 1.5 s task when the run ends
    run_file("slow_task.py", odd_server, tmp_path, "-s", stop_timeout, users=2, run_time="2s")
    finished = json.loads((tmp_path / "seen.json").read_text())["finished"]
    assert finished == (4 if finish else 2), finished


def test_first_user_starts_at_once(odd_server, tmp_path):
    # spawn rate 1: the first user must not wait a second for its turn (the run is only 1 s)
    run_file("first_start.py", odd_server, tmp_path, users=1, rate=1, run_time="1s")
    assert json.loads((tmp_path / "seen.json").read_text())["first_request_after_s"] < 0.5


@pytest.mark.parametrize("goaway", [False, True], ids=["tls", "goaway-every-50"])
def test_scripted_users_over_http2_with_tls(nginx, tmp_path, goaway):
    """nginx's TLS listener negotiates HTTP/2 by ALPN; its access log shows each request's protocol.
    On the second listener nginx ends each connection with GOAWAY after 50 requests (as after 1,000 by
    default): a user's next request goes on a new connection, and none fails."""
    nginx.reset_log()
    env = dict(os.environ, STOP_AFTER_REQUESTS="400")
    prefix = tmp_path / "out"
    p = squall(
        "-f",
        FILES / "h2.py",
        "-H",
        nginx.goaway_url if goaway else nginx.tls_url,
        "--headless",
        "-u",
        4,
        "-r",
        100,
        "-t",
        "60s",
        "--http2",
        "--insecure",
        "--csv",
        prefix,
        env=env,
        timeout=90,
    )
    assert p.returncode == 0, (p.stdout[-2000:], p.stderr[-2000:])
    s = stats(prefix)
    n = int(s["Aggregated"]["Request Count"])
    assert n >= 400 and s["Aggregated"]["Failure Count"] == "0", s["Aggregated"]
    assert int(s["echo"]["Request Count"]) > 0 and int(s["cookies"]["Request Count"]) > 0
    assert exceptions(prefix) == []  # (the file's assertions on bodies, headers and cookies held)
    log = open(nginx.dir / "access.log").read().splitlines()
    # Every request squall counted reached nginx over HTTP/2 (users stopped mid-request may add a few).
    assert n <= sum("HTTP/2.0" in line for line in log) <= n + 4 and not any("HTTP/1.1" in line for line in log)


@pytest.mark.slow
@pytest.mark.serial
def test_open_model_keeps_its_rate_against_a_stalling_server(tmp_path):
    """`--rate`: task iterations start at 400 a second whatever the server does. The server stalls
    500 ms once a second; measured from each iteration's intended start, squall's percentiles match the
    server's ground truth (kernel receive timestamp to response) within 2 ms beyond the lag it reports,
    and not one arrival is lost: the server sees exactly rate x duration requests. (squall and the server
    each get a core, as in the bench stall test; see its docstring for the host's freezes.)"""
    server = OddServer(core=0)
    try:
        out = tmp_path / "r.json"
        p = squall(
            "-f",
            FILES / "open_stall.py",
            "-H",
            server.url,
            "--headless",
            "-u",
            600,
            "--rate",
            400,
            "-t",
            "5s",
            "--result-json",
            out,
            "--only-summary",
            timeout=120,
            core=1,
        )
        assert p.returncode == 0, (p.stdout[-2000:], p.stderr[-2000:])
        truth = sorted(json.loads(squall_get(server.url + "/__truth")))
    finally:
        server.stop()
    r = json.loads(out.read_text())
    s = r["schedule"]
    assert (s["intended"], s["sent"], s["dropped"]) == (2000, 2000, 0), s
    assert len(truth) == r["aggregate"]["requests"] == 2000 and r["abandoned"] == 0
    assert r["load"]["model"] == "open"
    for pct in ("50", "99"):
        true_us = truth[math.ceil(len(truth) * float(pct) / 100) - 1]
        got_us = r["aggregate"]["percentiles_us"][pct]
        # When a stall ends, its ~200 held responses arrive at once and the engine times them in one
        # turn (about 10 µs each): 5 ms covers that, beyond the lag of the iterations' starts.
        assert -5000 <= got_us - true_us <= 5000 + s["max_lag_us"], (pct, got_us, true_us, s)
    assert r["aggregate"]["percentiles_us"]["99"] >= 485_000  # the stall shows: no coordinated omission


@pytest.mark.slow
def test_a_shape_can_return_a_rate(odd_server, tmp_path):
    """A LoadTestShape that returns {"rate": R} runs the open model at R; the server's count is the
    schedule's: every intended iteration ran once."""
    out = tmp_path / "r.json"
    p = squall(
        "-f",
        FILES / "rate_shape.py",
        "-H",
        odd_server.url,
        "--headless",
        "-u",
        50,
        "--result-json",
        out,
        "--only-summary",
        timeout=60,
    )
    assert p.returncode == 0, (p.stdout[-2000:], p.stderr[-2000:])
    r = json.loads(out.read_text())
    s = r["schedule"]
    assert odd_server.served() == r["aggregate"]["requests"] == s["intended"] == s["sent"], s
    # 2 s at 100/s and 2 s at 300/s is 800; the shape's ticks come about once a second, so a starved
    # host that ticks a second late shifts a second from one rate to the other: 500 to 1,100.
    assert 400 <= s["intended"] <= 1200, s


def test_header_and_method_injection_is_refused(odd_server, tmp_path):
    """A header value or method carrying CR/LF is refused before anything is sent, as requests refuses
    it (an exception in the task), instead of putting an extra header or request on the wire."""
    p, prefix = run_file("injection.py", odd_server, tmp_path, run_time="2s", expect=1)
    messages = " ".join(row["Message"] for row in exceptions(prefix))
    assert "invalid value for header" in messages and "invalid HTTP method" in messages, messages
    assert odd_server.served() == 0


def test_script_requests_time_out_like_bench_requests(tmp_path):
    """A server that accepts but never answers: each request ends at its `timeout=` (0.3 s) as a
    failure, timed from its start; the watchdog that ends it looks every 10 ms, and the hub polls at
    least every 100 ms, so each takes 0.3 s to 0.41 s, plus whatever a starved host adds (0.5 s
    allowed: far below the 60 s default it replaces)."""
    import socket

    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(100)  # the kernel completes the handshakes; nobody reads
    try:
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        prefix = tmp_path / "out"
        p = squall(
            "-f",
            FILES / "timeouts.py",
            "-H",
            url,
            "--headless",
            "-u",
            2,
            "-r",
            10,
            "-t",
            "2s",
            "--csv",
            prefix,
            timeout=60,
        )
    finally:
        silent.close()
    assert p.returncode == 1, (p.stdout[-2000:], p.stderr[-2000:])
    row = stats(prefix)["silent"]
    assert int(row["Request Count"]) >= 4 and row["Failure Count"] == row["Request Count"], row
    assert float(row["Min Response Time"]) >= 300 and float(row["Max Response Time"]) <= 1000, row
    assert exceptions(prefix) == []  # the responses said what the task expected
    failures = list(csv.DictReader(open(f"{prefix}_failures.csv")))
    assert [f["Error"] for f in failures] == ["request timed out"], failures


def test_the_command_line_host_wins_over_the_class_host(odd_server, tmp_path):
    """As in Locust, -H replaces a User class's own `host`: a file written against production and run
    with -H pointing elsewhere must not load production."""
    p, prefix = run_file("host_override.py", odd_server, tmp_path, run_time="1s")
    assert exceptions(prefix) == [] and int(stats(prefix)["/ok"]["Request Count"]) > 0
    n = int(stats(prefix)["/ok"]["Request Count"])
    assert n <= odd_server.served() <= n + 1  # one may be in flight when the run ends


def test_a_redirect_loop_fails_after_30_redirects(odd_server, tmp_path):
    p, prefix = run_file("redirect_loop.py", odd_server, tmp_path, run_time="20s", expect=1)
    rows = list(csv.DictReader(open(f"{prefix}_failures.csv")))
    assert [(r["Name"], r["Occurrences"]) for r in rows] == [("/loop", "3")]
    assert "exceeded 30 redirects" in rows[0]["Error"]
    # What the server saw: each of the 3 requests, then its 30 redirects followed.
    assert odd_server.served("/loop") == 3 * 31


def test_host_credentials_authenticate_every_request_and_are_never_shown(nginx, tmp_path):
    nginx.reset_log()
    out = tmp_path / "r.json"
    host = nginx.url.replace("http://", "http://alice:s3cr%40t@")
    p = squall(
        "-f", FILES / "dashboard.py", "-H", host, "--headless", "-u", 1, "-t", "1s", "--result-json", out,
        "--csv", tmp_path / "run",
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    lines = (nginx.dir / "access.log").read_text().splitlines()
    assert lines and all(" - alice [" in line for line in lines)  # nginx names the basic-auth user
    for text in (p.stdout, p.stderr, out.read_text(), *(f.read_text() for f in tmp_path.glob("run_*.csv"))):
        assert "s3cr" not in text


@pytest.mark.serial
@pytest.mark.slow
def test_task_control_and_user_error_as_locust_defines_them(nginx, tmp_path):
    """Three tasks, equal weights, 0.2 s wait: RescheduleTaskImmediately skips the wait, so /resched is
    followed at once by another task; InterruptTaskSet returns from the nested set to the user; every
    ValueError fires user_error once and is counted in the exceptions."""
    nginx.reset_log()
    seen = tmp_path / "seen.json"
    out = tmp_path / "r.json"
    p = squall(
        "-f", FILES / "task_control.py", "-H", nginx.url, "--headless", "-u", 2, "-r", 2, "-t", "3s",
        "--result-json", out, "--only-summary", env=dict(os.environ, SQUALL_TEST_OUT=str(seen)),
    )  # fmt: skip
    assert p.returncode == 1, p.stderr  # the task's exceptions make the exit code Locust's 1
    counts = json.loads(seen.read_text())
    r = json.loads(out.read_text())
    logged = (nginx.dir / "access.log").read_text()
    assert counts["resched"] == logged.count("GET /resched") > 0
    assert counts["nested"] == logged.count("GET /nested") > 0
    assert counts["user_errors"] == sum(x["count"] for x in r["exceptions"]) > 0
    # A task ends in a 0.2 s wait unless it rescheduled: the task after a reschedule began at once
    # (each within 100 ms of it, half the wait, on a loaded host), the task after any other waited
    # (each at least the 0.2 s, less the clock's few microseconds between the two readings).
    after = counts["after_ms"]
    assert after["resched"] and after["other"], counts
    assert max(after["resched"]) < 100, after
    assert min(after["other"]) >= 199, after


@pytest.mark.slow
def test_csv_full_history_has_a_row_per_endpoint_and_second(nginx, tmp_path):
    prefix = tmp_path / "run"
    p = squall(
        "-f", FILES / "soak_mix.py", "-H", nginx.url, "--headless", "-u", 8, "-r", 8, "-t", "3s",
        "--csv", prefix, "--csv-full-history", "--only-summary",
    )  # fmt: skip
    # Enough choices that every endpoint is picked: 8 users for 2.5 s on average, a task and a 0.4 s
    # wait each, make about 50 tasks; the Reports set runs about 4 of them a visit, so 50 / 1.6 = 31
    # choices among browse (0.5), cart (0.3), Reports (0.2); none is cart with 0.7^31 = 2e-5 (with 4
    # users for 2 s, 10 choices: 0.7^10 = 3%, which CI saw once).
    assert p.returncode == 0, p.stderr
    rows = list(csv.DictReader(open(f"{prefix}_stats_history.csv")))
    names = {r["Name"] for r in rows}
    assert {"browse", "cart", "Aggregated"} <= names
    per_second = [r for r in rows if r["Name"] == "Aggregated"]
    seen = set()
    for agg in per_second:  # each second's endpoint rows add up to its aggregate row, totals too
        parts = [r for r in rows if r["Timestamp"] == agg["Timestamp"] and r["Name"] != "Aggregated"]
        assert sum(int(r["Requests/s"]) for r in parts) == int(agg["Requests/s"])
        assert sum(int(r["Total Request Count"]) for r in parts) == int(agg["Total Request Count"])
        names = [r["Name"] for r in parts]
        assert seen <= set(names) and names == sorted(names), (seen, names)  # every entry seen, as Locust
        seen |= set(names)
    # Each endpoint's totals add its seconds up, and its last are its row of the stats CSV.
    stats = {r["Name"]: r for r in csv.DictReader(open(f"{prefix}_stats.csv"))}
    for name in seen:
        mine = [r for r in rows if r["Name"] == name]
        counts = [int(r["Requests/s"]) for r in mine]
        assert [int(r["Total Request Count"]) for r in mine] == [sum(counts[: i + 1]) for i in range(len(counts))]
        last, final = mine[-1], stats[name]
        assert last["Total Request Count"] == final["Request Count"]
        assert last["Total Failure Count"] == final["Failure Count"]
        for total, column in [("Median", "Median"), ("Min", "Min"), ("Max", "Max")]:
            assert float(last[f"Total {total} Response Time"]) == float(final[f"{column} Response Time"]), name
        assert float(last["Total Average Response Time"]) == pytest.approx(float(final["Average Response Time"]))
        assert float(last["Total Average Content Size"]) == pytest.approx(float(final["Average Content Size"]))


def test_reset_stats_rates_are_over_the_time_since_the_reset(nginx, browser, tmp_path):
    """--reset-stats: 10 users paced at 10 requests a second each (paced.py), started at 5 a second, so
    the reset comes about 2 s in, once all 10 run; from then on they make 100 a second (known math), and
    every rate the run shows reads that, over the time since the reset: the summary table, the CSV, the
    history's totals, Locust's JSON and the HTML report's card (before, the rates were over the whole
    run: about 60 a second in a 5 s run). Ground truth beside the math: nginx's log of the requests that
    ended after the reset, which squall's totals match but for those in flight at the reset and at the
    end (at most one a user at each). The reset counts from the start of the second after the one it was
    asked in."""
    nginx.reset_log()
    prefix, out, html = tmp_path / "run", tmp_path / "r.json", tmp_path / "r.html"
    p = squall(
        "-f", FILES / "paced.py", "-H", nginx.url, "--headless", "-u", 10, "-r", 5, "-t", "5s", "--reset-stats",
        "--csv", prefix, "--csv-full-history", "--json", "--result-json", out,
        "--html", html, "--only-summary",
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    r = json.loads(out.read_text())
    assert 1.5 < r["reset_s"] < 3.5, r["reset_s"]
    reset = r["start_unix"] + r["reset_s"]
    n = r["aggregate"]["requests"]
    after = sum(1 for t, _ in nginx.log() if t >= reset)
    assert abs(n - after) <= 10, (n, after)
    counted = r["duration_s"] - r["reset_s"]
    rate = n / counted
    # 100 a second, give or take a request a user at either end of the 2.5-3.5 s counted: 20 / 250.
    assert abs(rate - 100) <= 8, (n, counted)
    [agg] = [row for row in csv.DictReader(open(f"{prefix}_stats.csv")) if row["Name"] == "Aggregated"]
    assert float(agg["Requests/s"]) == pytest.approx(rate, rel=1e-4)
    table = next(line for line in p.stderr.splitlines() if line.split()[:1] == ["Aggregated"])  # the stats table
    assert float(table.split()[-2]) == pytest.approx(rate, abs=0.01), table
    [entry] = json.loads(p.stdout)  # Locust's JSON
    assert entry["num_requests"] / (entry["last_request_timestamp"] - entry["start_time"]) == pytest.approx(100, abs=10)
    # The reset takes effect at a second's start, so the history's totals, the sum of the seconds from
    # there on, are the run's totals exactly (from the second the reset fell in, they had counted up
    # to 100 requests more: that second's before the reset).
    assert r["reset_s"] == int(r["reset_s"]), r["reset_s"]
    history = list(csv.DictReader(open(f"{prefix}_stats_history.csv")))
    last = [row for row in history if row["Name"] == "Aggregated"][-1]
    assert int(last["Total Request Count"]) == n, (n, last)
    for row in history:  # one endpoint: its totals are the aggregate's
        if row["Name"] == "/":
            [same] = [a for a in history if a["Name"] == "Aggregated" and a["Timestamp"] == row["Timestamp"]]
            totals = [k for k in row if k.startswith("Total ")]  # (Locust's seven Total columns)
            assert len(totals) == 7 and [row[k] for k in totals] == [same[k] for k in totals], (row, same)
    page = open_page(browser, html.as_uri(), offline=True)
    assert float(page.locator("[data-testid='rps']").get_attribute("data-value")) == pytest.approx(rate, abs=1e-3)
    assert f"average since the reset at {r['reset_s']:.1f} s" in page.locator("[data-card='rps']").inner_text()
    # "received" is the responses' bytes as they came, as in the console (it was the bodies alone).
    wire = r["aggregate"]["wire_bytes"] / 1000  # (tens of KB here: the page's one decimal)
    assert f"{wire:.1f} KB received" in page.locator("[data-card='total-requests']").inner_text()
    assert page.console_errors == []


def test_processes_minus_one_is_one_per_core(nginx, tmp_path):
    nginx.reset_log()
    out = tmp_path / "r.json"
    p = squall(
        "-f", FILES / "dashboard.py", "-H", nginx.url, "--headless", "-u", 4, "-r", 4, "-t", "2s",
        "--processes", "-1", "--result-json", out, "--only-summary",
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    assert f"{os.cpu_count()} worker processes" in p.stderr
    r = json.loads(out.read_text())
    assert r["aggregate"]["requests"] <= nginx.requests_logged() <= r["aggregate"]["requests"] + r["abandoned"]


def test_locust_headless_from_the_environment(nginx, tmp_path):
    p = squall(
        "-f", FILES / "dashboard.py", "-H", nginx.url, "-u", 1, "-t", "1s", "--only-summary",
        env=dict(os.environ, LOCUST_HEADLESS="true"), timeout=60,
    )  # fmt: skip
    assert p.returncode == 0 and "dashboard at" not in p.stderr, p.stderr


def test_each_config_layer_contributes_the_setting_only_it_sets(nginx, tmp_path):
    """~/.locust.conf, [tool.locust], ./locust.conf, --config, LOCUST_* and the command line each set
    one setting no other sets; all six take effect, as the server sees: its connection numbers give the
    users (one keep-alive connection each) and its log the host; the result gives the run time."""
    nginx.reset_log()
    home, cwd = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    cwd.mkdir()
    (home / ".locust.conf").write_text("spawn-rate = 50\n")
    (cwd / "pyproject.toml").write_text('[tool.locust]\nrun-time = "2s"\n')
    (cwd / "locust.conf").write_text("users = 3\n")
    (cwd / "extra.conf").write_text(f"host = {nginx.url}\n")
    out = tmp_path / "r.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOCUST_")}
    env.update(HOME=str(home), LOCUST_ONLY_SUMMARY="true")
    p = squall(
        "-f", FILES / "dashboard.py", "--config", "extra.conf", "--headless", "--result-json", out, cwd=cwd, env=env
    )
    assert p.returncode == 0, p.stderr
    r = json.loads(out.read_text())
    assert len({conn for _, conn in nginx.log()}) == 3  # users, from locust.conf
    assert 2.0 <= r["duration_s"] < 2.5  # run-time, from pyproject.toml
    assert r["aggregate"]["requests"] <= nginx.requests_logged() <= r["aggregate"]["requests"] + r["abandoned"]
    assert p.stderr.count("Aggregated") == 2  # only the summary (LOCUST_ONLY_SUMMARY): stats and percentiles
    # spawn-rate 50 from ~/.locust.conf: the 3 users started within the first second, not one a second.
    assert r["timeseries"][0]["users"] == 3


@pytest.mark.slow
def test_users_slow_to_make_start_one_after_another_while_the_others_run(nginx, tmp_path):
    """Each user's __init__ sleeps 0.5 s: as in Locust, users are made one after another (the fourth
    starts about 1.5 s after the first: each user keeps its own connection, nginx logs which), and the
    users already made go on requesting meanwhile (20 a second each): the sleep is cooperative, it holds
    only the making of users, not the run."""
    nginx.reset_log()
    p = squall(
        "-f", FILES / "slow_init.py", "-H", nginx.url, "--headless", "-u", 4, "-r", 100, "-t", "4s",
        "--only-summary", env=dict(os.environ, SLOW_INIT="0.5"),
    )  # fmt: skip
    assert p.returncode == 0, p.stderr[-2000:]
    log = nginx.log()
    first = {}
    for at, conn in log:
        first.setdefault(conn, at)
    starts = sorted(first.values())
    assert len(starts) == 4, first
    gaps = [b - a for a, b in zip(starts, starts[1:])]
    assert all(0.45 <= g <= 0.7 for g in gaps), gaps  # one at a time, 0.5 s each
    before_last = sum(1 for at, _ in log if at < starts[-1])
    # Made at 0.5, 1.0 and 1.5 s, the first three users had 1.5, 1.0 and 0.5 s before the fourth: 60
    # requests at 20 a second; the scheduling of a loaded host may cost a few.
    assert before_last >= 45, before_last


@pytest.mark.slow
def test_users_that_misbehave_end_alone_and_a_thread_of_the_file_goes_on(nginx, tmp_path):
    """sys.exit() and KeyboardInterrupt in a task, a wait_time that raises: each is that user's error,
    counted once, and that user ends (Locust's whole process would die with exit code 3, its statistics
    unwritten); the well-behaved user requests all along, and a thread the file started at import (a
    greenlet once gevent patched threading, as under Locust) ticks every 50 ms throughout."""
    nginx.reset_log()
    out = tmp_path / "seen.json"
    p = squall(
        "-f", FILES / "misbehaving.py", "-H", nginx.url, "--headless", "-u", 4, "-r", 100, "-t", "3s",
        "--csv", tmp_path / "m", env=dict(os.environ, SQUALL_TEST_OUT=str(out)),
    )  # fmt: skip
    assert p.returncode == 1, p.stderr[-2000:]  # task exceptions: --exit-code-on-error's 1
    rows = list(csv.DictReader(open(tmp_path / "m_exceptions.csv")))
    assert sorted((r["Count"], r["Traceback"].strip().splitlines()[-1]) for r in rows) == [
        ("1", "KeyboardInterrupt"),
        ("1", "SystemExit: 3"),
        ("1", "ValueError: no wait for you"),
    ]
    seen = json.loads(out.read_text())
    # 3 s of the fine user at 10 a second, and of the thread at 20 (a loaded host may cost a few).
    assert seen["fine"] >= 20 and seen["ticks"] >= 40, seen
    # The BadWait user's one request, and the fine user's; one may be in flight when the run ends.
    assert seen["fine"] + 1 <= nginx.requests_logged() <= seen["fine"] + 2

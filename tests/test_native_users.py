"""Native users (squall.user.native): users whose tasks are only requests with fixed arguments run them
in the engine. Judged by what the server received (tests/servers/recorder.py) against squall's own
statistics, and against the same file run with every task in Python (SQUALL_NATIVE_TASKS=0)."""

import csv
import json
import math
import os
import urllib.request
from pathlib import Path

import pytest

from support import serving, squall
from test_locust_corpus import Recorder, received

FILES = Path(__file__).parent / "locustfiles"
SESSION = "session=s3ss10n"  # the cookie the recorder's /login sets


@pytest.fixture(scope="module")
def recorder():
    r = Recorder()
    yield r
    r.stop()


def run(recorder, tmp_path, name, *extra, native=True, env=None):
    """Runs tests/locustfiles/NAME headless against the recorder; returns (process, CSV prefix, records)."""
    recorder.reset()
    prefix = tmp_path / ("native" if native else "python")
    environ = dict(os.environ, SQUALL_NATIVE_TASKS="1" if native else "0", **(env or {}))
    args = ["-f", FILES / name, "--headless", "-H", recorder.url, "--csv", prefix, "--loglevel", "DEBUG", *extra]
    p = squall(*args, env=environ, timeout=60)
    assert p.returncode in (0, 1), p.stderr[-3000:]
    return p, prefix, recorder.log()


def stats(prefix):
    rows = csv.DictReader(open(f"{prefix}_stats.csv"))
    return {(r["Type"], r["Name"]): (int(r["Request Count"]), int(r["Failure Count"])) for r in rows}


def failure_messages(prefix):
    return {r["Error"] for r in csv.DictReader(open(f"{prefix}_failures.csv"))}


def logged(records, method, path):
    return sum(1 for r in records if r["method"] == method and r["path"] == path)


@pytest.mark.slow
def test_native_users_send_what_python_sends_and_count_what_the_server_received(recorder, tmp_path):
    users, seconds = 6, 3
    common = ("-u", users, "-r", users, "-t", f"{seconds}s")
    p, prefix, records = run(recorder, tmp_path, "native.py", *common)
    assert "Shop runs natively" in p.stderr and "Api runs natively" in p.stderr, p.stderr[-2000:]
    q, python_prefix, python_records = run(recorder, tmp_path, "native.py", *common, native=False)
    assert "runs its tasks in Python: SQUALL_NATIVE_TASKS=0" in q.stderr

    # The same requests, byte for byte in what the server compares (method, path, query, headers,
    # cookies, body), as the Python path sends them: only how many of each differs.
    assert set(received(records)) == set(received(python_records))

    # Every request of a Shop user after its login carries the login's cookie (the user's jar, shared
    # by on_start in Python and the tasks in the engine).
    shop = [r for r in records if r["path"] in ("/items", "/cart", "/redirect/done", "/done", "/status/503")]
    assert shop and all(SESSION in dict(r["headers"]).get("cookie", "") for r in shop)

    # squall's counts against the server's: each logged request was measured, except at most one in
    # flight per user at the end (cancelled unmeasured, as in Locust).
    counted = stats(prefix)
    expected = {
        ("GET", "items"): ("GET", "/items"),
        ("POST", "/cart"): ("POST", "/cart"),
        ("GET", "/redirect/done"): ("GET", "/done"),  # one request, the redirect followed
        ("GET", "/status/503"): ("GET", "/status/503"),
        ("HEAD", "/items"): ("HEAD", "/items"),
        ("GET", "/ping"): ("GET", "/ping"),
        ("POST", "/form"): ("POST", "/form"),
        ("DELETE", "/things/1"): ("DELETE", "/things/1"),
    }
    for key, (method, path) in expected.items():
        measured, on_server = counted[key][0], logged(records, method, path)
        assert 0 < measured <= on_server <= measured + users, (key, measured, on_server)
    assert counted[("GET", "/status/503")][1] == counted[("GET", "/status/503")][0] > 0  # every one failed
    assert sum(f for key, (_, f) in counted.items() if key[1] != "Aggregated") == counted[("GET", "/status/503")][1]
    assert failure_messages(prefix) == failure_messages(python_prefix)

    # Weights: browse (3) against buy (1), task by task a Bernoulli draw of p = 3/4; within 5 standard
    # deviations of the binomial.
    browse, buy = counted[("GET", "items")][0], counted[("POST", "/cart")][0]
    n = browse + buy
    assert abs(browse - 0.75 * n) < 5 * math.sqrt(n * 0.75 * 0.25), (browse, buy)

    # Wait times, by their math: constant_throughput(20) starts a Shop user's task at most every 50 ms
    # (the first after a whole period), 3 users; between(0.02, 0.04) waits at least 20 ms, 3 Api users.
    # Exact upper bounds; below them the rate is the server's (the recorder answers in about 40 ms:
    # Nagle's algorithm against delayed ACKs, for either path), so the lower bound is half the Python
    # path's on the same server, just before.
    python_counted = stats(python_prefix)
    python_n = python_counted[("GET", "items")][0] + python_counted[("POST", "/cart")][0]
    assert 0.5 * python_n <= n <= 3 * (seconds / 0.05 + 1), (n, python_n)
    pings, python_pings = counted[("GET", "/ping")][0], python_counted[("GET", "/ping")][0]
    assert 0.5 * python_pings <= pings <= 3 * (seconds / 0.02 + 1), (pings, python_pings)


@pytest.mark.slow
def test_a_request_listener_added_mid_run_sees_the_requests_that_follow(recorder, tmp_path):
    seen_file = tmp_path / "seen"
    p, prefix, records = run(
        recorder, tmp_path, "native_listener.py", "-u", 4, "-r", 4, "-t", "3s", env={"SEEN_FILE": str(seen_file)}
    )
    assert "Steady runs natively" in p.stderr
    total = stats(prefix)[("GET", "/a")][0]
    seen = int(seen_file.read_text())
    # The listener came at 1 s of 3: it sees the requests of the last 2 s (two thirds, less the users'
    # start-up), each of them also counted once in the statistics.
    assert 0.4 * total <= seen <= total, (seen, total)
    assert total <= logged(records, "GET", "/a") <= total + 4


def test_stop_timeout_lets_native_users_finish_their_task(recorder, tmp_path):
    args = ("Pairs", "-u", 5, "-r", 5, "-t", "1s", "--stop-timeout", "5s")
    p, prefix, records = run(recorder, tmp_path, "native_pairs.py", *args)
    assert "Pairs runs natively" in p.stderr
    first, second = logged(records, "GET", "/delay/300"), logged(records, "GET", "/after")
    assert first == second > 0, (first, second)  # every task begun was finished
    counted = stats(prefix)
    assert counted[("GET", "/delay/300")][0] == first and counted[("GET", "/after")][0] == second


@pytest.mark.slow
def test_a_native_request_past_its_timeout_fails_as_in_python(recorder, tmp_path):
    runs = {}
    for native in (True, False):
        args = ("Slow", "-u", 2, "-r", 2, "-t", "2s")
        p, prefix, records = run(recorder, tmp_path, "native_pairs.py", *args, native=native)
        counted = stats(prefix)[("GET", "/delay/1000")]
        # Each user's request ends 0.3 s in: about 2 s / 0.3 s of them a user, every one a failure.
        assert counted[0] == counted[1] and 2 * 4 <= counted[0] <= 2 * (2 / 0.3 + 1), counted
        assert counted[0] <= logged(records, "GET", "/delay/1000") <= counted[0] + 2
        runs[native] = failure_messages(prefix)
    assert runs[True] == runs[False] and len(runs[True]) == 1, runs


@pytest.mark.slow
@pytest.mark.serial
def test_native_users_that_think_time_responses_when_they_arrived(tmp_path):
    """Native users that think read their responses once a millisecond (script/mod.rs `TICK`), each
    timed by the kernel's receive stamp: against a server that answers exactly 20 ms after each request
    (tests/servers/delay_server.py), no response may read faster, and the mean may not read later than
    the Python path's (whose stamped reads test_ground_truth checks against the server's own send times)
    by more than a quarter of the millisecond a tick could add unstamped (half a millisecond on
    average). The two runs come one after the other, and a loaded host makes the server late by as much
    as a millisecond on average (CI: 20.90 ms for the Python path): each run's mean is taken less the
    server's own lateness in that run (its `/__late`), so that only the generators' difference counts."""
    means = {}
    with serving("delay_server.py", 20) as port:
        url = f"http://127.0.0.1:{port}"
        for native in ("1", "0"):
            lateness(url)  # counted from here
            out = tmp_path / native
            args = ["-f", FILES / "native_think.py", "--headless", "-u", 50, "-r", 50, "-t", "4s"]
            p = squall(*args, "-H", url, "--json-file", out, "--loglevel", "DEBUG",
                       env=dict(os.environ, SQUALL_NATIVE_TASKS=native), timeout=60)  # fmt: skip
            assert p.returncode == 0, p.stderr[-2000:]
            assert ("Thinking runs natively" in p.stderr) == (native == "1")
            (row,) = json.loads(Path(f"{out}.json").read_text())
            assert row["num_requests"] > 1000 and row["num_failures"] == 0, row
            assert row["min_response_time"] >= 20.0, row
            late = lateness(url)
            assert late["count"] >= row["num_requests"], (late, row)  # (those cancelled at the end too)
            means[native] = row["total_response_time"] / row["num_requests"] - late["mean_late_ms"]
    assert means["1"] <= means["0"] + 0.25, means


def lateness(url):
    """The delay server's answers since the last ask: their count and mean lateness (ms)."""
    with urllib.request.urlopen(url + "/__late", timeout=10) as r:
        return json.loads(r.read())


def test_users_whose_sessions_differ_each_send_their_own(recorder, tmp_path):
    """A header on_start sets per user is in each of that user's requests: users share a plan only
    where their sessions are set alike."""
    p, _, records = run(recorder, tmp_path, "native_per_user.py", "-u", 5, "-r", 50, "-t", "2s")
    assert "Mine runs natively" in p.stderr, p.stderr[-2000:]
    sent = [dict(r["headers"]).get("x-user") for r in records if r["path"] == "/mine"]
    assert len(sent) > 5 * 10  # each user requests every 50 ms for about 2 s
    assert sorted(set(sent)) == [f"u{i}" for i in range(5)]
    # Each user's requests go out on its own connection: its header on every one of them.
    by_connection = {}
    for r in records:
        if r["path"] == "/mine":
            by_connection.setdefault(r["peer"], set()).add(dict(r["headers"]).get("x-user"))
    assert len(by_connection) >= 5 and all(len(users) == 1 for users in by_connection.values()), by_connection


def test_a_native_user_keeps_one_connection_from_on_start_to_on_stop(recorder, tmp_path):
    """The engine keeps a native user's connection in the user (not its pool) between requests: it
    takes the one on_start's request left in the pool, and hands it back when the plan ends, as the
    same task in Python would use one connection throughout. Judged by the client ports the server saw."""
    args = ("-u", 3, "-r", 30, "-t", "1s", "--stop-timeout", "2s")
    p, _, records = run(recorder, tmp_path, "native_handover.py", *args)
    assert "Handover runs natively" in p.stderr, p.stderr[-2000:]
    peers = {}
    for r in records:
        peers.setdefault(dict(r["headers"]).get("x-user"), {}).setdefault(r["path"], set()).add(r["peer"])
    assert sorted(peers) == ["u0", "u1", "u2"], peers
    for user, paths in peers.items():
        assert set(paths) == {"/hello", "/mine", "/bye"}, (user, paths)
        assert paths["/hello"] == paths["/mine"] == paths["/bye"] and len(paths["/mine"]) == 1, (user, paths)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["close-after-3", "announce-3", "chunked", "cookie", "split"])
def test_what_one_read_cannot_finish_goes_on_in_the_users_exchange(tmp_path, mode):
    """Native users that think, a request a task, have their requests sent and their responses read by
    the engine's passes (script/native.rs `send_now`, `receive_now`) while their tasks sleep; a response
    that is not whole in one read, or asks for more than its status and sizes (a cookie, a close, a
    chunked body), goes on in the user's own exchange, from what was read. Against a server that does
    each of those (tests/servers/keepalive_server.py), judged by what it answered: every answer counted,
    none failed, the retries after a close not counted twice, the cookie sent with every request after
    it was set, the body's size and the split answer's time as the server made them."""
    users = 20
    with serving("keepalive_server.py", mode) as port:
        url = f"http://127.0.0.1:{port}"
        prefix = tmp_path / mode
        args = ["-f", FILES / "native_driven.py", "Driven", "--headless", "-u", users, "-r", users, "-t", "3s"]
        p = squall(*args, "-H", url, "--csv", prefix, "--loglevel", "DEBUG", timeout=60)
        assert p.returncode == 0, p.stderr[-3000:]
        assert "Driven runs natively" in p.stderr, p.stderr[-2000:]
        with urllib.request.urlopen(url + "/__log", timeout=10) as r:
            answered = json.loads(r.read())
    (row,) = [r for r in csv.DictReader(open(f"{prefix}_stats.csv")) if r["Name"] == "/"]
    count, failures = int(row["Request Count"]), int(row["Failure Count"])
    # 20 users a request every 30 ms on average: about 2,000 in 3 s (half of that on a slow host).
    assert count > 1000 and failures == 0, row
    # Every answer counted but those still on their way when the run ended (a user's at most).
    assert len(answered) - users <= count <= len(answered), (count, len(answered))
    connections = {}
    for number, cookie in answered:
        connections.setdefault(number, []).append(cookie)
    if mode in ("close-after-3", "announce-3"):
        assert all(len(c) <= 3 for c in connections.values()), connections
        assert len(connections) >= len(answered) / 3, (len(connections), len(answered))
    elif mode == "cookie":
        assert len(connections) == users, len(connections)  # (nothing closes: one a user)
        assert all(not c[0] and all(c[1:]) for c in connections.values()), connections
    elif mode == "chunked":
        assert float(row["Average Content Size"]) == 5.0, row
    elif mode == "split":
        assert float(row["Min Response Time"]) >= 5.0, row


def test_a_request_the_engine_sent_fails_at_its_timeout(tmp_path):
    """A request the engine's pass sent (`send_now`) and the server answers too late ends at its
    timeout, a failure, as in Python; its connection closes and the user's next request opens another."""
    with serving("delay_server.py", 1000) as port:
        url = f"http://127.0.0.1:{port}"
        prefix = tmp_path / "late"
        args = ["-f", FILES / "native_driven.py", "Late", "--headless", "-u", 3, "-r", 3, "-t", "2s"]
        p = squall(*args, "-H", url, "--csv", prefix, "--loglevel", "DEBUG", timeout=60)
        assert p.returncode == 1, p.stderr[-3000:]
        assert "Late runs natively" in p.stderr, p.stderr[-2000:]
    counted = stats(prefix)[("GET", "/")]
    # Each user's request ends 0.3 s in (the watchdog looks every 10 ms), then 20-40 ms of thinking:
    # 2 s / 0.35 s, 5 to 7 a user.
    assert counted[0] == counted[1] and 3 * 4 <= counted[0] <= 3 * 7, counted
    assert failure_messages(prefix) == {"Request timed out"} or len(failure_messages(prefix)) == 1

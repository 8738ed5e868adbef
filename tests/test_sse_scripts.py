"""A locustfile's streamed requests (`stream=True`) read as they arrive, against ground truth:
tests/servers/sse_server.py sends events at known delays and counts what it sent and the connections
it saw; the locustfile (tests/locustfiles/sse_stream.py) writes the time.perf_counter() of each line it
got, so the script's own clock, not squall's numbers, says when the events reached it (docs/sse.md).

Bounds: the server sleeps its delays with time.sleep (about 0.1 ms late on an idle host); on loopback
an event reaches the script its way back plus a pass of the hub later (tenths of a millisecond).
SLACK_MS allows 5 ms for that on a loaded 2-core host shared with other builds: a tenth of the 50 ms
gaps, and the head, sent at once, must come well before the first event's 40 ms."""

import json
import os
import statistics
import subprocess
import sys
import time

import pytest

from support import HERE, needs_locust, sent, serving, squall, squall_get

pytestmark = pytest.mark.serial

FILE = HERE / "locustfiles" / "sse_stream.py"
FIRST_MS, GAP_MS, EVENTS = 40, 50, 5  # the locustfile's /sse?events=5&ms=50&first=40
SLACK_MS = 5


def run(tmp_path, sse, mode, tasks, *args, user="Reader", duration="60s", code=0):
    """The locustfile run by squall with MODE and TASKS, its `user` class (the file has two: Locust's
    dispatcher gives one user to FastReader, first by name), exiting with `code`; (its records, its
    result, the process)."""
    out, result = tmp_path / "out.jsonl", tmp_path / "r.json"
    env = {**os.environ, "MODE": mode, "TASKS": str(tasks), "OUT": str(out)}
    argv = ["-f", FILE, "-H", sse, "--headless", "-u", 1, "-r", 1, "-t", duration, "--result-json", result]
    p = squall(*argv, *args, *([user] if user else []), env=env)
    assert p.returncode == code, p.stderr[-2000:]
    records = [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []
    return records, json.loads(result.read_text()), p


def endpoint(result, name):
    (e,) = [e for e in result["endpoints"] if e["name"] == name]
    return e


def check_arrivals(records):
    """Each task's data lines: all the server's, the first after its first delay, each next one its
    gap after the one before (not all at the end)."""
    gaps = []
    for r in records:
        assert r["data"] == [f"data: event {i}" for i in range(EVENTS)], r["data"]
        first_ms = (r["at"][0] - r["t0"]) * 1000
        assert FIRST_MS <= first_ms <= FIRST_MS + 2 * SLACK_MS, first_ms  # (the first task connects too)
        gaps += [(b - a) * 1000 for a, b in zip(r["at"], r["at"][1:])]
    # Each within twice the slack (a gap of 56 ms once in a few hundred on the loaded development
    # host), their median within half of it.
    assert all(GAP_MS - 2 * SLACK_MS <= g <= GAP_MS + 2 * SLACK_MS for g in gaps), gaps
    assert abs(statistics.median(gaps) - GAP_MS) <= SLACK_MS / 2, gaps


def test_events_reach_the_script_as_the_server_sends_them(sse, tmp_path):
    sent(sse)
    records, r, _ = run(tmp_path, sse, "times", 4)
    truth = sent(sse)
    check_arrivals(records)
    # The call returned at the head, which the server sends at once: before the first event existed.
    assert all((x["head"] - x["t0"]) * 1000 < FIRST_MS / 2 for x in records), records
    e = endpoint(r, "sse")
    # Recorded as Locust records a streamed request: its time to the head, not the stream's 240 ms.
    assert e["requests"] == 4 and e["failures"] == 0 and e["max_us"] < FIRST_MS / 2 * 1000, e
    s = e["stream"]
    assert (s["streams"], s["completed"], s["cut"]) == (4, 4, 0) and truth["whole"] == 4
    assert s["events"] == truth["events"] == 4 * EVENTS
    # Received: every byte the server sent, the bodies' too, though each request was recorded at its
    # head (they read the heads alone: "2.14 KB received" where a relay passed 5,729 bytes).
    assert e["wire_bytes"] == truth["bytes"], (e["wire_bytes"], truth)
    # The engine's timing of the same events: its gaps the server's too.
    assert abs(s["gap"]["percentiles_us"]["50"] / 1000 - GAP_MS) <= SLACK_MS / 2, s


def test_events_reach_the_script_as_they_arrive_over_http2(tmp_path):
    """`--http2` (h2c to tests/servers/sse_h2_server.py, an event a DATA frame): the call returns at the
    head and each line reaches the script as its frame arrives, with HTTP/1.1's bounds."""
    with serving("sse_h2_server.py") as port:
        base = f"http://127.0.0.1:{port}"
        records, r, _ = run(tmp_path, base, "times", 3, "--http2")
        truth = sent(base)
    check_arrivals(records)
    assert all((x["head"] - x["t0"]) * 1000 < FIRST_MS / 2 for x in records), records
    e = endpoint(r, "sse")
    assert e["requests"] == 3 and e["max_us"] < FIRST_MS / 2 * 1000, e
    s = e["stream"]
    assert (s["streams"], s["completed"], s["cut"], s["events"]) == (3, 3, 0, truth["events"]), s


def test_fasthttpusers_iter_lines_streams_too(sse, tmp_path):
    records, r, _ = run(tmp_path, sse, "times", 3, user="FastReader")
    check_arrivals(records)
    e = endpoint(r, "sse")
    assert (e["requests"], e["stream"]["completed"], e["stream"]["events"]) == (3, 3, 3 * EVENTS)


def test_sseclient_py_reads_the_events_as_they_arrive(sse, tmp_path):
    """sseclient-py's SSEClient(response), which iterates the response (pinned in requirements/dev.txt
    for the tests; not a dependency of squall's)."""
    records, r, _ = run(tmp_path, sse, "sseclient", 3)
    check_arrivals(records)
    assert endpoint(r, "sse")["stream"]["completed"] == 3


def test_a_cut_stream_raises_in_the_script_and_is_counted_cut(sse, tmp_path):
    sent(sse)
    records, r, _ = run(tmp_path, sse, "cut", 3)
    truth = sent(sse)
    # What came before the cut reached the script, then requests' ChunkedEncodingError.
    assert records == [{"data": ["data: event 0", "data: event 1"], "error": "ChunkedEncodingError"}] * 3
    e = endpoint(r, "cut")
    s = e["stream"]
    # Counted once, at its head (as Locust); the cut in the stream's numbers, with its reason.
    assert (e["requests"], e["failures"], s["streams"], s["completed"], s["cut"]) == (3, 0, 3, 0, 3), e
    assert s["cut_reasons"] == {"server closed the connection mid-response": 3}
    assert s["events"] == truth["events"] == 6
    assert e["wire_bytes"] == truth["bytes"], (e["wire_bytes"], truth)  # (all they brought: see above)


def test_a_caught_stream_is_judged_by_its_block_and_timed_to_its_head(sse, tmp_path):
    """catch_response=True with stream=True, as in Locust: the block reads the stream and judges the
    request, whose time is still its head's (the block took 60 ms: 3 events 20 ms apart)."""
    records, r, _ = run(tmp_path, sse, "caught", 2, code=1)  # (failures: exit code 1)
    assert records == [{"data": 3}] * 2
    e = endpoint(r, "caught")
    assert (e["requests"], e["failures"], e["stream"]["completed"]) == (2, 2, 2), e
    assert e["max_us"] < 20_000, e
    errors = [(x["name"], x["message"], x["count"]) for x in r["errors"]]
    assert errors == [("caught", "CatchResponseError('read all 3')", 2)], errors


def test_a_stalled_stream_times_out_between_reads(sse, tmp_path):
    records, r, _ = run(tmp_path, sse, "stall", 2)
    for x in records:
        assert x["error"] == "ConnectionError", x
        waited_ms = (x["raised"] - x["last"]) * 1000
        assert 300 <= waited_ms <= 300 + 4 * SLACK_MS, waited_ms  # timeout=(5, 0.3): the read timeout
    s = endpoint(r, "stall")["stream"]
    assert (s["streams"], s["cut"], s["cut_reasons"]) == (2, 2, {"request timed out": 2}), s


def test_a_whole_body_stream_ended_by_its_timeout_is_cut(sse, tmp_path):
    """Without stream=True the request's timeout is the whole request's; an event stream it ends is cut
    ("request timed out"), as a stream=True one's read timeout and squall bench's --timeout cut theirs
    (it was counted begun and neither completed nor cut). The server sent 2 events a stream."""
    records, r, _ = run(tmp_path, sse, "whole_stall", 2, code=1)  # (the timeouts fail: exit 1)
    for x in records:
        assert x["error"] is not None and 0.3 <= x["waited"] <= 0.3 + 4 * SLACK_MS / 1000, x
    e = endpoint(r, "whole_stall")
    s = e["stream"]
    assert (e["requests"], e["failures"], s["streams"], s["completed"], s["cut"]) == (2, 2, 2, 0, 2), e
    assert s["cut_reasons"] == {"request timed out": 2} and s["events"] == 4, s


@pytest.mark.parametrize("native", ["1", "0"], ids=["native", "python"])
def test_a_native_users_stream_ended_by_its_timeout_is_cut_too(sse, tmp_path, native):
    """The same rule for a native user (its request made in the engine, its timeout kept by its own
    task): each stream its timeout ends is cut; one still open at -t is left in flight. 1 user, 0.3 s a
    request, 1.6 s: 4 or 5 timeouts (the first after the interpreter's start-up), 2 events each (the
    server's)."""
    result = tmp_path / "r.json"
    argv = ["-f", HERE / "locustfiles" / "sse_native.py", "-H", sse, "--headless", "-u", 1, "-t", "1.6s", "-L", "DEBUG"]
    p = squall(*argv, "--result-json", result, env={**os.environ, "SQUALL_NATIVE_TASKS": native})
    assert p.returncode == 1, p.stderr[-2000:]  # (the timeouts fail)
    assert ("StallReader runs natively" in p.stderr) == (native == "1"), p.stderr[-2000:]
    e = endpoint(json.loads(result.read_text()), "native_stall")
    s = e["stream"]
    assert 3 <= e["failures"] == e["requests"] == s["cut"] <= 5, e
    assert s["cut_reasons"] == {"request timed out": s["cut"]} and s["completed"] == 0, s
    assert s["streams"] - s["cut"] in (0, 1) and s["events"] == 2 * s["streams"], s


def test_a_stream_left_mid_way_frees_its_connection(sse, tmp_path):
    """Closed mid-way or dropped unread, its connection closes (the server sees it go, and the next
    request opens one); read to its end (or by `content`), it serves the next request."""
    records, r, _ = run(tmp_path, sse, "abandon", 2)
    for x in records:
        seen = x["conns"]
        assert [c["open"] for c in seen] == [1, 1, 1, 1], seen  # only the connection asking
        first = seen[0]["accepted"]
        assert [c["accepted"] - first for c in seen] == [0, 1, 1, 1], seen
    for name in ("abandoned", "dropped"):
        s = endpoint(r, name)["stream"]
        assert (s["streams"], s["completed"], s["cut"]) == (2, 0, 0), s  # left by the script: neither
    assert endpoint(r, "whole")["stream"]["completed"] == 8


def test_a_streamed_call_left_unread_is_timed_to_its_head(sse, tmp_path):
    """A task of one streamed call with constant arguments, its response never read: run in Python
    (not as a native plan, which would time the whole 40 ms stream), recorded at its head; each on a
    connection of its own, as with requests (the one before is held by its unread body until the
    dropped response's stream is closed, at the engine's next scan)."""
    before = json.loads(squall_get(sse + "/__conns"))["accepted"]
    _, r, _ = run(tmp_path, sse, "unread", 5)
    e = endpoint(r, "unread")
    assert (e["requests"], e["failures"], e["stream"]["streams"]) == (5, 0, 5) and e["max_us"] < 20_000, e
    assert json.loads(squall_get(sse + "/__conns"))["accepted"] - before == 5 + 1  # (+1: this count's own)


def test_users_reading_an_endless_stream_stop_on_time(sse, tmp_path):
    t0 = time.monotonic()
    records, r, _ = run(tmp_path, sse, "endless", 0, duration="2s")
    took = time.monotonic() - t0
    started, stopped = records[0]["started"], records[-1]["stopped"]
    assert 2.0 <= stopped - started <= 2.0 + 0.5, stopped - started
    assert took < 2.0 + 5, took  # (the interpreter's start and the locustfile's import included)
    s = endpoint(r, "endless")["stream"]
    # Its events counted as they came: about 2 s / 50 ms, the stream neither completed nor cut.
    assert (s["streams"], s["completed"], s["cut"]) == (1, 0, 0) and 30 <= s["events"] <= 41, s


@pytest.mark.parametrize("http2", [False, True], ids=["http1", "http2"])
def test_streamed_bodies_over_http2_and_streamed_failures(nginx, odd_server, tmp_path, http2):
    """Over HTTP/2 a streamed request's body reads as over HTTP/1.1; a streamed request that got no
    response is a streamed response too (a with block, an empty body), its failure recorded; over
    HTTP/1.1, redirects are followed (the cookie set on the way sent on) before the last response's
    body is streamed, and a redirect loop fails as requests'."""
    out, result = tmp_path / "out.jsonl", tmp_path / "r.json"
    url, flags = (nginx.h2c_url, ["--http2"]) if http2 else (nginx.url, [])
    env = {**os.environ, "OUT": str(out), **({} if http2 else {"ODD_URL": odd_server.url})}
    argv = ["-f", HERE / "locustfiles" / "stream_edges.py", "-H", url, "--headless", "-u", 1, "-t", "30s"]
    p = squall(*argv, *flags, "--result-json", result, env=env)
    assert p.returncode == 1, p.stderr[-2000:]  # (the refused request's failure)
    found = json.loads(out.read_text())
    expected = {"status": 200, "body": "hello\n", "kind": "StreamedResponse", "failed": True, "lines": []}
    expected["session"] = ["StreamedResponse", "hello\n"]  # (a session whose `stream` is True)
    counts = {"streamed": (2, 0), "refused": (1, 1)}
    if not http2:
        headers = found.pop("redirected")
        assert headers[:2] == [200, "/headers"] and "Cookie: auth=token1" in headers[2], headers
        expected["loop"] = "exceeded 30 redirects (TooManyRedirects)"
        counts.update(redirected=(1, 0), loop=(1, 1))
    assert found == expected, found
    r = json.loads(result.read_text())
    assert {e["name"]: (e["requests"], e["failures"]) for e in r["endpoints"]} == counts


@pytest.mark.slow
def test_locust_times_the_same_file_the_same_way(sse, tmp_path):
    """Locust 2.47 on the same file: its script sees the events at the same times, and it records the
    same time to the head."""
    needs_locust()

    out = tmp_path / "locust.jsonl"
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOCUST_")}
    env.update(MODE="times", TASKS="3", OUT=str(out))
    argv = ["-f", FILE, "-H", sse, "--headless", "-u", 1, "-r", 1, "-t", "60s", "--json-file", tmp_path / "l"]
    argv.append("Reader")
    p = subprocess.run(
        [sys.executable, "-m", "locust", *map(str, argv)], capture_output=True, text=True, env=env, timeout=90
    )
    assert p.returncode == 0, p.stderr[-2000:]
    records = [json.loads(line) for line in out.read_text().splitlines()]
    # Locust's script gets them one by one too, each a gap after the one before (later than squall's:
    # requests and urllib3 read in Python; gaps of 49-70 ms for the server's 50 on the development
    # host, so only the lower bound is held to the server's).
    for r in records:
        assert r["data"] == [f"data: event {i}" for i in range(EVENTS)], r["data"]
        gaps = [(b - a) * 1000 for a, b in zip(r["at"], r["at"][1:])]
        assert all(g >= GAP_MS - SLACK_MS for g in gaps), gaps
    (stats,) = json.loads((tmp_path / "l.json").read_text())
    # Its time to the head too: below the first event's 40 ms (37 ms at most, for its first request,
    # which sets requests up, on the development host), far below the stream's 240; its size 0 (no
    # Content-Length), as squall records it.
    times = sorted(int(t) for t, n in stats["response_times"].items() for _ in range(n))
    assert stats["num_requests"] == 3 and times[1] < FIRST_MS and stats["total_content_length"] == 0, stats

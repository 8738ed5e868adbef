"""Server-Sent Events in `squall bench`, against ground truth: tests/servers/sse_server.py sends a known
number of events at known delays and records what it sent (docs/sse.md).

The server sleeps its delays with time.sleep (about 0.1 ms late on an idle host) and records each send's
real gap; squall times an event when the read that brings it returns. So on loopback the time to first
event is the server's first delay plus the request's way there and the event's way back (tenths of a
millisecond), and a gap is the server's gap plus the difference of two events' ways back. The bounds
below allow 5 ms for that on a loaded 2-core host shared with other builds: a tenth of the delays."""

import json
import os
import statistics
import time

import pytest

from support import HERE, free_port, listening, sent, serving, squall, squall_process, wait_until

pytestmark = pytest.mark.serial

FIRST_MS, GAP_MS, EVENTS, STREAMS = 40, 20, 8, 6
SLACK_MS = 5


def bench(tmp_path, url, *args):
    out = tmp_path / "r.json"
    p = squall("bench", url, *args, "--json", out)
    assert p.returncode in (0, 1), p.stderr[-2000:]
    return p, json.loads(out.read_text())


@pytest.mark.parametrize("framing", ["chunked", "length", "close"])
def test_events_and_their_times_are_the_servers(sse, tmp_path, framing):
    sent(sse)
    url = f"{sse}/sse?events={EVENTS}&ms={GAP_MS}&first={FIRST_MS}&framing={framing}&lines=crlf"
    p, r = bench(tmp_path, url, "-n", STREAMS, "-c", 2)
    truth = sent(sse)
    agg, s = r["aggregate"], r["aggregate"]["stream"]
    # Counts: exactly what the server sent, every stream whole.
    assert truth["events"] == STREAMS * EVENTS and truth["whole"] == STREAMS
    assert s["events"] == agg["events"] == truth["events"]
    assert (s["streams"], s["completed"], s["cut"]) == (STREAMS, STREAMS, 0)
    assert agg["failures"] == 0 and s["cut_reasons"] == {}
    assert sum(sec.get("events", 0) for sec in r["timeseries"]) == truth["events"], "the seconds carry every event"
    # Time to first event: never before the server's first delay, its median within the slack.
    first = s["first_event"]
    assert first["count"] == STREAMS
    assert first["min_us"] >= FIRST_MS * 1000, first
    assert first["percentiles_us"]["50"] <= (FIRST_MS + SLACK_MS) * 1000, first
    # Gaps: one fewer than the events of each stream; their median is the server's within the slack.
    gap = s["gap"]
    assert gap["count"] == STREAMS * (EVENTS - 1)
    server_gap = statistics.median(truth["gaps_ms"])
    assert GAP_MS <= server_gap < GAP_MS + SLACK_MS, truth["gaps_ms"]
    assert abs(gap["percentiles_us"]["50"] / 1000 - server_gap) <= SLACK_MS / 2, (gap, server_gap)
    # A stream's gaps add up to its last event's time less its first's, at the client as at the server:
    # their means differ by the difference of two events' ways back over the 7 gaps, whatever the load
    # (a host busy enough to read one event 15 ms late shows one short gap, not a shorter mean).
    server_mean = statistics.mean(truth["gaps_ms"])
    assert abs(gap["mean_us"] / 1000 - server_mean) <= SLACK_MS / 2, (gap, server_mean)
    # The request's latency is the whole stream: at least every delay.
    assert agg["min_us"] >= (FIRST_MS + (EVENTS - 1) * GAP_MS) * 1000
    assert 0 < s["events_per_s"] == pytest.approx(s["events"] / r["duration_s"])
    # The printed summary says it.
    assert "Event streams (text/event-stream)" in p.stdout
    assert f"{STREAMS} begun, {STREAMS} completed, 0 cut" in p.stdout
    assert "time to first event" in p.stdout and "gap between events" in p.stdout


@pytest.mark.parametrize(
    "query, reason",
    [
        ("framing=chunked", "server closed the connection mid-response"),
        ("framing=length", "server closed the connection mid-response"),
        ("framing=chunked&reset=1", "connection reset by peer"),
        ("framing=close&reset=1", "connection reset by peer"),
    ],
)
def test_a_stream_cut_mid_way_is_a_failure_with_its_reason(sse, tmp_path, query, reason):
    sent(sse)
    p, r = bench(tmp_path, f"{sse}/sse?events=6&ms=5&cut=2&{query}", "-n", 4, "-c", 1)
    truth = sent(sse)
    s = r["aggregate"]["stream"]
    assert (truth["events"], truth["streams"], truth["whole"]) == (8, 4, 0)
    assert (s["streams"], s["completed"], s["cut"], s["events"]) == (4, 0, 4, 8)
    assert s["cut_reasons"] == {reason: 4}
    assert r["aggregate"]["failures"] == 4
    assert [(e["message"], e["count"]) for e in r["errors"]] == [(reason, 4)]
    assert p.returncode == 1
    # What the cut streams' bodies brought is received, in the totals and their seconds alike (a failed
    # request carries no bytes: it read 0 B): each stream's two events, as the server wrote them.
    event = lambda i: len(f"id: {i}\ndata: event {i}\n: a comment\n\n")  # (sse_server.py's `event`)
    body = 4 * (event(0) + event(1))
    assert r["aggregate"]["body_bytes"] == body and sum(t["body_bytes"] for t in r["timeseries"]) == body
    # On the wire, their heads and chunks' framing too: every byte the server sent (a reset may lose
    # what the client had not read yet: at most what was sent).
    wire = r["aggregate"]["wire_bytes"]
    assert sum(t["wire_bytes"] for t in r["timeseries"]) == wire
    assert wire == truth["bytes"] if "reset" not in query else body < wire <= truth["bytes"], (wire, truth)


def test_an_error_status_with_the_event_stream_type_is_no_stream(sse, tmp_path):
    """A 503 whose body is typed text/event-stream (a server shedding load): EventSource fails such a
    connection, so it is a failed request, not a stream begun and completed (before: 4 begun, 4
    completed and their events beside 4 failures). The server sent its events all the same."""
    sent(sse)
    p, r = bench(tmp_path, f"{sse}/sse?events=3&ms=5&status=503", "-n", 4, "-c", 1)
    assert sent(sse)["streams"] == 4
    assert r["aggregate"]["failures"] == 4 and r["aggregate"]["status_codes"] == {"503": 4}
    assert r["aggregate"].get("stream") is None and r["aggregate"].get("events", 0) == 0, r["aggregate"]
    assert p.returncode == 1


def test_a_close_delimited_stream_ends_at_the_close(sse, tmp_path):
    """Without a length or chunks, the server's close is the body's end (HTTP/1.1's framing): whole."""
    sent(sse)
    _, r = bench(tmp_path, f"{sse}/sse?events=6&ms=5&cut=2&framing=close", "-n", 3, "-c", 1)
    s = r["aggregate"]["stream"]
    assert sent(sse)["events"] == 6
    assert (s["streams"], s["completed"], s["cut"], s["events"], r["aggregate"]["failures"]) == (3, 3, 0, 6, 0)


@pytest.mark.parametrize("path, events", [("/silent", 0), ("/stall?events=2", 2)])
def test_silence_and_stalls_time_out_and_the_run_ends_on_time(sse, tmp_path, path, events):
    """A server that never answers: timeouts. A stream that stops sending: cut by the timeout, which
    counts from its last bytes. Either way the run ends at -t."""
    t0 = time.monotonic()
    p, r = bench(tmp_path, sse + path, "-t", "3s", "--timeout", "1s", "-c", 2, "-q")
    took = time.monotonic() - t0
    # -t 3s; the start-up and the result's writing take about half a second here.
    assert took < 3 + 1.5, took
    assert r["stop_reason"] == "duration"
    agg = r["aggregate"]
    assert agg["failures"] == agg["requests"] >= 2
    assert {e["kind"] for e in r["errors"]} == {"timeout"}
    if not events:
        assert "stream" not in agg
        return
    s = agg["stream"]
    assert s["cut"] == agg["requests"] and s["cut_reasons"] == {"request timed out": s["cut"]}
    assert events * s["cut"] <= s["events"] <= events * s["streams"], s
    # Each timed out 1 s after its last bytes (the watchdog looks every 50 ms).
    assert 1_000_000 <= agg["min_us"] <= 1_300_000, agg


def test_an_endless_stream_ends_with_the_run_and_a_huge_event_is_refused(sse, tmp_path):
    sent(sse)
    t0 = time.monotonic()
    p, r = bench(tmp_path, f"{sse}/sse?events=1000000&ms=10", "-t", "2s", "-c", 2, "-q")
    assert time.monotonic() - t0 < 2 + 1.5
    s = r["aggregate"]["stream"]
    # Two streams, neither ended: still open when the run ended (in flight, not counted as requests).
    assert (s["streams"], s["completed"], s["cut"], r["abandoned"], r["aggregate"]["requests"]) == (2, 0, 0, 2, 0)
    assert p.returncode == 0, "streams that sent events measured something: a success"
    # Every event the server sent before the run ended was counted: the server may have sent one more
    # a stream before it saw the connection close (its send succeeds into the socket's buffer).
    time.sleep(0.1)  # the server's threads see the closed connections
    served = sent(sse)
    truth = served["events"]
    assert truth - 4 <= s["events"] <= truth, (s["events"], truth)
    assert s["events"] > 2 * 2 / 0.1, "at least an event every 100 ms a stream, however loaded the host"
    # Their bodies are received, though no request ended (it read "0 B received" beside the events):
    # the events counted, as the server wrote them (its comment line made the 1,000,000th's length).
    event = lambda i: len(f"id: {i}\ndata: event {i}\n: a comment\n\n")
    a = r["aggregate"]
    assert a["body_bytes"] >= sum(event(i) for i in range(s["events"] // 2)), (a["body_bytes"], s["events"])
    assert sum(t["body_bytes"] for t in r["timeseries"]) == a["body_bytes"]
    # On the wire, their heads and chunks' framing too: what the server sent, but for the events it may
    # have sent after the run ended (4 at most, above; a chunk of one is under 64 bytes).
    assert sum(t["wire_bytes"] for t in r["timeseries"]) == a["wire_bytes"]
    assert served["bytes"] - 4 * 64 <= a["wire_bytes"] <= served["bytes"], (a["wire_bytes"], served["bytes"])
    _, r = bench(tmp_path, f"{sse}/huge", "-n", 2, "-c", 1, "-q")
    s = r["aggregate"]["stream"]
    assert s["cut_reasons"] == {"too large: event-stream event above 1024 KiB": 2}
    assert (s["events"], s["completed"]) == (0, 0)


def test_the_demo_target_streams_events(tmp_path):
    """`squall demo --serve`'s /sse: N events M ms apart, chunked (hyper's)."""
    port = free_port()
    proc = squall_process("demo", "--serve", "--port", port)
    try:
        wait_until(lambda: listening(port), "the demo target", proc)
        _, r = bench(tmp_path, f"http://127.0.0.1:{port}/sse?events=5&ms=10", "-n", 4, "-c", 2, "-q")
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    s = r["aggregate"]["stream"]
    assert (s["streams"], s["completed"], s["cut"], s["events"]) == (4, 4, 0, 20)
    assert s["first_event"]["min_us"] >= 10_000 and s["gap"]["count"] == 16


def test_a_locustfiles_streamed_requests_are_timed_as_benchs(sse, tmp_path):
    """A locustfile's `self.client.get(..., stream=True)`: the engine times its events as bench does
    (docs/sse.md; the script reading them as they come: test_sse_scripts.py)."""
    sent(sse)
    out = tmp_path / "r.json"
    p = squall(
        "-f", HERE / "locustfiles" / "sse_reader.py", "-H", sse, "--headless", "-u", 1, "-r", 1, "-t", "60s",
        "--result-json", out, env={**os.environ, "STOP_AFTER_REQUESTS": "6"},
    )  # fmt: skip
    assert p.returncode == 0, p.stderr[-2000:]
    truth = sent(sse)
    r = json.loads(out.read_text())
    assert not r.get("exceptions"), r["exceptions"]
    (e,) = r["endpoints"]
    s = e["stream"]
    # Six requests counted, each at its head (as Locust counts a streamed one): the sixth's stream was
    # left in flight when its head's count stopped the run (its events so far counted: the server may
    # have sent one more), the five before it whole.
    assert (e["requests"], s["streams"], s["completed"], s["cut"]) == (6, 6, 5, 0)
    assert truth["whole"] >= 5
    assert truth["events"] - 1 <= s["events"] <= truth["events"] and s["events"] >= 25
    assert s["first_event"]["min_us"] >= 30_000 and s["first_event"]["percentiles_us"]["50"] <= 35_000, s
    assert s["gap"]["count"] == s["events"] - s["first_event"]["count"], s
    assert abs(s["gap"]["percentiles_us"]["50"] / 1000 - 20) <= SLACK_MS, s


def test_a_locustfiles_streams_over_http2_are_timed_too(tmp_path):
    """`--http2` (prior knowledge to tests/servers/sse_h2_server.py, the `h2` library): the same file's
    streams timed from their DATA frames as over HTTP/1.1, against what the server sent."""
    out = tmp_path / "r.json"
    with serving("sse_h2_server.py") as port:
        base = f"http://127.0.0.1:{port}"
        p = squall(
            "-f", HERE / "locustfiles" / "sse_reader.py", "-H", base, "--headless", "-u", 1, "-r", 1, "-t", "60s",
            "--http2", "--result-json", out, env={**os.environ, "STOP_AFTER_REQUESTS": "6"},
        )  # fmt: skip
        assert p.returncode == 0, p.stderr[-2000:]
        truth = sent(base)
    r = json.loads(out.read_text())
    assert not r.get("exceptions"), r["exceptions"]
    (e,) = r["endpoints"]
    s = e["stream"]
    # As over HTTP/1.1: the sixth request, counted at its head, stopped the run with its stream in flight.
    assert (e["requests"], s["streams"], s["completed"], s["cut"]) == (6, 6, 5, 0)
    assert truth["events"] - 1 <= s["events"] <= truth["events"] and s["events"] >= 25
    assert s["first_event"]["min_us"] >= 30_000 and s["first_event"]["percentiles_us"]["50"] <= 35_000, s
    assert abs(s["gap"]["percentiles_us"]["50"] / 1000 - statistics.median(truth["gaps_ms"])) <= SLACK_MS / 2, s


def test_bench_over_http2_times_the_events_of_data_frames(tmp_path):
    """`squall bench --http2` (its own lean HTTP/2 client, h2c to tests/servers/sse_h2_server.py): the
    events read from the DATA frames as they arrive, timed and counted as over HTTP/1.1."""
    with serving("sse_h2_server.py") as port:
        base = f"http://127.0.0.1:{port}"
        sent(base)
        url = f"{base}/sse?events={EVENTS}&ms={GAP_MS}&first={FIRST_MS}"
        _, r = bench(tmp_path, url, "--http2", "-n", STREAMS, "-c", 2)
        truth = sent(base)
    s = r["aggregate"]["stream"]
    assert truth["events"] == STREAMS * EVENTS
    assert (s["streams"], s["completed"], s["cut"], s["events"]) == (STREAMS, STREAMS, 0, truth["events"])
    assert s["first_event"]["min_us"] >= FIRST_MS * 1000
    assert s["first_event"]["percentiles_us"]["50"] <= (FIRST_MS + SLACK_MS) * 1000, s["first_event"]
    assert s["gap"]["count"] == STREAMS * (EVENTS - 1)
    server_gap = statistics.median(truth["gaps_ms"])
    assert abs(s["gap"]["percentiles_us"]["50"] / 1000 - server_gap) <= SLACK_MS / 2, (s["gap"], server_gap)


def test_the_open_model_ends_on_time_with_streams_in_flight(sse, tmp_path):
    """--rate sends on schedule until -t; then a run waits up to --timeout for the requests in flight,
    except for event streams, which need not end: once they are all that is left, the run is over."""
    t0 = time.monotonic()
    url = f"{sse}/sse?events=1000000&ms=50"
    p, r = bench(tmp_path, url, "--rate", 2, "-c", 10, "-t", "2s", "--timeout", "20s", "-q")
    took = time.monotonic() - t0
    assert took < 2 + 2.5, took  # not 2 + 20 s
    assert p.returncode == 0 and r["stop_reason"] == "duration" and r["duration_s"] == pytest.approx(2.0)
    s = r["aggregate"]["stream"]
    assert s["streams"] == r["schedule"]["sent"] == r["abandoned"] >= 3 and s["events"] > 0, (s, r["schedule"])

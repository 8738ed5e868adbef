"""`squall bench ws://`: WebSocket exchanges (a message sent, its reply read) against a server that
counts what it received and sent (tests/servers/ws_server.py, the `websockets` library): counts equal,
latencies within the server's known delay, and the server's misdeeds (closes, silence, a 64 MB frame,
fragments, pings, a refused handshake) counted as what they are, with runs that end on time."""

import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support import self_signed, serving, squall, ws_counts
from test_web import open_page, points, shot


def since(ws, before):
    return {k: v - before[k] for k, v in ws_counts(ws).items() if k != "agents"}  # (who opened them: not here)


def bench(tmp_path, url, *args, code=0):
    out = tmp_path / "r.json"
    out.unlink(missing_ok=True)
    p = squall("bench", url, *args, "--json", out, "-q")
    assert p.returncode == code, p.stderr
    return json.loads(out.read_text())


def test_every_exchange_is_a_message_the_server_received_and_answered(ws, tmp_path):
    before = ws_counts(ws)
    r = bench(tmp_path, f"ws://{ws}/echo", "-n", 3000, "-c", 20, "--message", "hello there")
    seen = since(ws, before)
    agg = r["aggregate"]
    assert agg["requests"] == seen["received"] == seen["replies"] == 3000 and agg["failures"] == 0
    assert agg["body_bytes"] == seen["reply_bytes"] == 3000 * len("hello there")
    (e,) = r["endpoints"]
    assert (e["method"], e["name"], e["status_codes"]) == ("WS", "/echo", {})  # a message has no status
    # The handshakes are the connects: one per connection, and the one before the run (a dead or
    # wrong target is one clear error, not a run of failures).
    assert r["connect"]["requests"] == 20 and seen["connections"] == 21
    assert r["url"] == f"ws://{ws}/echo" and r["method"] == "WS"


def test_the_report_shows_the_exchanges_the_server_counted_and_no_status_chart(ws, browser, tmp_path):
    before = ws_counts(ws)
    html = tmp_path / "r.html"
    bench(tmp_path, f"ws://{ws}/echo", "--rate", 200, "-t", "2s", "-c", 5, "--html", html)
    received = since(ws, before)["received"]
    page = open_page(browser, html.as_uri(), offline=True)
    assert page.console_errors == []
    shot(page, "websocket-report")
    row = page.locator("[data-testid='stats-table'] tbody tr").first.inner_text().split("\t")
    assert row[:3] == ["WS", "/echo", f"{received:,}"], row
    assert points(page, "rps") >= 2
    # A message has no status: no "no response" series for every exchange.
    assert page.locator("[data-testid='chart-status']").count() == 0


def test_a_binary_message_from_a_file(ws, tmp_path):
    blob = bytes(range(256)) * 40
    (tmp_path / "m.bin").write_bytes(blob)
    before = ws_counts(ws)
    r = bench(tmp_path, f"ws://{ws}/echo", "-n", 200, "-c", 2, "--message", f"@{tmp_path / 'm.bin'}", "--binary")
    assert r["aggregate"]["failures"] == 0
    assert r["aggregate"]["body_bytes"] == since(ws, before)["reply_bytes"] == 200 * len(blob)
    p = squall("bench", f"ws://{ws}/echo", "-n", 1, "--message", f"@{tmp_path / 'm.bin'}")
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "--binary" in p.stderr, p.stderr


def test_the_open_model_sends_the_rate_times_the_duration(ws, tmp_path):
    before = ws_counts(ws)
    r = bench(tmp_path, f"ws://{ws}/echo", "--rate", 300, "-t", "2s", "-c", 1000)
    om = r["schedule"]
    assert om["intended"] == om["sent"] == 600 and om["dropped"] == 0  # Schedule's exact count
    assert r["aggregate"]["requests"] + r["abandoned"] == since(ws, before)["received"] == 600
    # Connections opened as the rate needed them, not the cap: 600 sends can never need 1,000 (a cap
    # of 20 was all used on a loaded machine, where each reply took longer).
    assert r["connect"]["requests"] == r["timeseries"][-1]["users"] < 1000


@pytest.mark.serial  # a median against the server's clock: a neighbour's load would move it
def test_latency_is_the_servers_known_delay_and_no_less(ws, tmp_path):
    r = bench(tmp_path, f"ws://{ws}/delay?ms=25", "-c", 4, "-t", "2s")
    agg = r["aggregate"]
    # The server answers 25 ms after it read the message (asyncio.sleep: never early), so no exchange
    # can take less; the median allows for a loaded machine's scheduling (xdist's neighbours).
    assert agg["failures"] == 0 and agg["min_us"] >= 25_000, agg
    assert agg["percentiles_us"]["50"] < 50_000, agg["percentiles_us"]
    # 4 connections, one exchange at a time each, 25 ms apiece: at most 4 * 2 s / 25 ms.
    assert 100 <= agg["requests"] <= 320


def test_a_close_from_the_server_fails_the_exchange_with_its_code_and_reason(ws, tmp_path):
    before = ws_counts(ws)
    r = bench(tmp_path, f"ws://{ws}/close?after=4", "-n", 400, "-c", 4)
    seen = since(ws, before)
    agg = r["aggregate"]
    assert agg["requests"] == seen["received"] == 400
    # Every 4th message of a connection is closed on; how the 400 fell to the 4 connections decides
    # the count (100 if evenly), and the server's count is the truth.
    assert agg["failures"] == seen["closes"] == 400 - seen["replies"] and 90 <= seen["closes"] <= 100
    (err,) = r["errors"]
    assert err["count"] == seen["closes"] and "WebSocket close 1001: bye" in err["message"], err
    # Each close costs the connection: the next exchange opens another (the handshake counted again).
    assert r["connect"]["requests"] == seen["connections"] - 1


def test_a_silent_server_times_out_and_the_run_ends_on_time(ws, tmp_path):
    before = ws_counts(ws)
    t0 = time.monotonic()
    r = bench(tmp_path, f"ws://{ws}/silent", "-c", 3, "-t", "2s", "--timeout", "0.5s", code=1)
    assert time.monotonic() - t0 < 15  # the run itself is 2 s; start-up and exit on a starved host
    agg = r["aggregate"]
    assert agg["requests"] == agg["failures"] > 0 and r["duration_s"] < 2.5
    assert {e["message"] for e in r["errors"]} == {"request timed out"}
    assert agg["requests"] + r["abandoned"] == since(ws, before)["received"]


def test_a_64_mb_frame_is_refused_before_its_payload_and_memory_stays_bounded(ws, tmp_path):
    out = tmp_path / "big.json"
    # squall under a parent that reports its peak RSS (the children's maximum, this one's only).
    code = (
        "import resource, subprocess, sys;"
        f"p = subprocess.run([sys.executable, '-m', 'squall', 'bench', 'ws://{ws}/big', '-n', '20', '-c', '2',"
        f" '--json', '{out}', '-q'], stdout=subprocess.DEVNULL);"
        "print(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    rc, peak_kb = map(int, p.stdout.split())
    assert rc == 1, p.stderr
    r = json.loads(out.read_text())
    assert r["aggregate"]["requests"] == r["aggregate"]["failures"] == 20
    (err,) = r["errors"]
    assert err["message"] == "too large: WebSocket frame over 16 MB", err
    assert peak_kb < 150_000, peak_kb  # squall's own size is about 40 MB; a 64 MB frame kept would show


def test_fragmented_replies_are_counted_whole(ws, tmp_path):
    before = ws_counts(ws)
    r = bench(tmp_path, f"ws://{ws}/fragments?n=50&size=1000", "-n", 100, "-c", 2)
    assert r["aggregate"]["failures"] == 0 and r["aggregate"]["requests"] == 100
    assert r["aggregate"]["body_bytes"] == since(ws, before)["reply_bytes"] == 100 * 50 * 1000


def test_pings_on_the_way_are_answered(ws, tmp_path):
    before = ws_counts(ws)
    r = bench(tmp_path, f"ws://{ws}/ping", "-n", 200, "-c", 2)
    assert r["aggregate"]["failures"] == 0
    assert since(ws, before)["pongs"] == 200  # the server waited for each pong before it replied


@pytest.mark.parametrize(
    ("path", "reason"),
    [("/reject", "did not open a WebSocket: HTTP 403"), ("/plain", "answered the handshake with 200, not 101")],
)
def test_a_path_that_is_no_websocket_is_one_clear_error_before_the_run(ws, path, reason):
    p = squall("bench", f"ws://{ws}{path}", "-n", 10)
    assert p.returncode == 3, p.stderr  # docs/numbers.md: the run could not start
    assert "Traceback" not in p.stderr and p.stderr.count("\n") == 1 and reason in p.stderr, p.stderr


def test_wss_with_a_self_signed_certificate(tmp_path):
    self_signed(tmp_path)
    with serving("ws_server.py", tmp_path) as port:
        r = bench(tmp_path, f"wss://localhost:{port}/echo", "-n", 100, "-c", 2, "--insecure")
        assert r["aggregate"]["requests"] == 100 and r["aggregate"]["failures"] == 0
        p = squall("bench", f"wss://localhost:{port}/echo", "-n", 10)
        assert p.returncode == 3 and "--insecure" in p.stderr and p.stderr.count("\n") == 1, p.stderr


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["http://127.0.0.1:9/", "--message", "x"], "--message and --binary are for ws://"),
        (["ws://127.0.0.1:9/", "--http2"], "--http2 is for http://"),
        (["ws://127.0.0.1:9/", "-d", "x"], "-d/--data is for http://"),
        (["ws://127.0.0.1:9/", "-H", "Sec-WebSocket-Extensions: permessage-deflate"], "sets Sec-WebSocket-Extensions"),
        (["ws://127.0.0.1:9/", "--message", "@/nonexistent"], "cannot read --message"),
    ],
)
def test_bad_websocket_flags_are_one_line_usage_errors(args, says):
    p = squall("bench", *args, "-n", 1)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and says in p.stderr, p.stderr


# --- WebSocketUser: scripted users whose WebSocket is the engine's (squall.contrib.websocket) ---

USERS_FILE = Path(__file__).parent / "locustfiles" / "ws_users.py"


def run_users(ws, tmp_path, user_class, users, seconds, path, timeout=30, code=0):
    out = tmp_path / "s.json"
    env = dict(os.environ, WS_PATH=path, WS_TIMEOUT=str(timeout))
    args = ["-f", USERS_FILE, user_class, "-H", f"ws://{ws}", "--headless", "-u", users, "-r", 100]
    p = squall(*args, "-t", f"{seconds}s", "--result-json", out, "--only-summary", env=env)
    assert p.returncode == code and "Traceback" not in p.stderr, p.stderr[-3000:]
    r = json.loads(out.read_text())
    return r, {(e["method"], e["name"]): e for e in r["endpoints"]}


def test_websocket_users_exchange_in_the_engine_as_the_server_counts(ws, tmp_path):
    before = ws_counts(ws)
    r, eps = run_users(ws, tmp_path, "Talker", 4, 2, "/echo")
    seen = since(ws, before)
    assert r["exceptions"] == []  # every reply was the message sent back (the tasks assert it)
    assert eps[("WS", "/echo")]["requests"] == seen["connections"] == 4  # the handshakes, once a user
    exchanged = eps[("WSC", "hello")]["requests"] + eps[("WSC", "blob")]["requests"]
    assert r["aggregate"]["failures"] == 0 and exchanged > 100
    # The server read every message counted, and at most one a user more (in flight at the end).
    assert 0 <= seen["received"] - exchanged <= 4, (seen, exchanged)
    # The task weights (3:1) drew the names: 0.25 of them blobs, within 5 standard deviations.
    share, sd = eps[("WSC", "blob")]["requests"] / exchanged, math.sqrt(0.25 * 0.75 / exchanged)
    assert abs(share - 0.25) < 5 * sd, share


@pytest.mark.serial  # receives timed by the server's gaps: a neighbour's load would move them
def test_websocket_users_receive_what_the_server_pushes_when_it_pushes(ws, tmp_path):
    before = ws_counts(ws)
    r, eps = run_users(ws, tmp_path, "Listener", 3, 3, "/push?n=20&ms=50")
    assert r["exceptions"] == []  # each user saw push 0, push 1, ... in order
    received = eps[("WSR", "push")]
    assert received["requests"] == since(ws, before)["pushed"] == 60 and received["failures"] == 0
    # Each receive waits for the next push, 50 ms after the last (asyncio.sleep: never early): about
    # 50 ms each, less the moment the task took between two receives; a loaded machine adds to it.
    assert 40_000 <= received["percentiles_us"]["50"] <= 100_000, received["percentiles_us"]


def test_a_websocket_users_greenlet_receives_while_its_task_sends(ws, tmp_path):
    """The listening greenlet waits in `receive` all the time; a send that waited its turn behind it would
    never go out (the echo it waits for comes after the send). Every send is a message the server
    received, every receive an echo it sent (those in flight at the end aside: one a user at most)."""
    users = 3
    before = ws_counts(ws)
    r, eps = run_users(ws, tmp_path, "Duet", users, 2, "/echo")
    seen = since(ws, before)
    assert r["exceptions"] == [] and r["aggregate"]["failures"] == 0, r["exceptions"]
    sent, received = eps[("WSS", "hi")]["requests"], eps[("WSR", "echo")]["requests"]
    assert sent > 100 and seen["received"] == sent, (sent, seen)  # a send is counted once written
    assert 0 <= seen["replies"] - received <= users, (received, seen)
    assert eps[("WS", "/echo")]["requests"] == seen["connections"] == users


def test_a_server_close_fails_the_exchange_quietly_and_the_next_one_reconnects(ws, tmp_path):
    before = ws_counts(ws)
    r, eps = run_users(ws, tmp_path, "Talker", 2, 2, "/close?after=3", code=1)  # (failures: exit 1, as Locust)
    seen = since(ws, before)
    assert r["exceptions"] == []  # WebSocketError ends the task as RescheduleTask does: no traceback
    failed = eps[("WSC", "hello")]["failures"] + eps[("WSC", "blob")]["failures"]
    assert 0 <= seen["closes"] - failed <= 2 and failed > 10  # (a close may come as the run ends)
    # Each reconnect counted; a user's reconnect still in its handshake when the run ended is not.
    assert 0 <= seen["connections"] - eps[("WS", "/close?after=3")]["requests"] <= 2
    assert {e["message"] for e in r["errors"]} == {"server closed the connection (WebSocket close 1001: bye)"}


def test_messages_past_a_full_inbox_are_failures_of_the_receives_row(ws, tmp_path):
    """1,500 messages pushed at once to a user that receives one a second: the inbox keeps 1,000, the
    oldest 500 are dropped, each a failure of the row its receives are recorded under ("push"), not of
    one named by the connection's path. Ground truth: the server's count of messages pushed."""
    before = ws_counts(ws)
    # (3 s: its first receive at 1 s, once the pushes came; make test's parallel tier once saw no drop in
    # a 2 s run whose first receive was at 0.5 s)
    r, eps = run_users(ws, tmp_path, "Hoarder", 1, 3, "/push?n=1500&ms=0", code=1)
    assert since(ws, before)["pushed"] == 1500
    assert eps[("WSR", "push")]["failures"] == 500 and ("WSR", "/push?n=1500&ms=0") not in eps, eps
    assert any("500 messages past an unread inbox of 1000" in e["message"] for e in r["errors"]), r["errors"]


@pytest.mark.parametrize("code", [1011, 1000])
def test_a_server_close_between_calls_is_the_connections_failure_unless_normal(ws, tmp_path, code):
    """The server closes each connection 20 ms after its 2nd reply, while the user waits its 0.1 s: no
    call meets the close, and the next call reconnects. Before, nothing said so (a server that kicked
    every user with 1011 looked healthy); now each such close is a failure of the connection's WS row
    with its code and reason, once, and a close 1000 (normal closure) is none. Ground truth: the closes
    the server sent (one a user may come as the run ends, before any call saw it)."""
    before = ws_counts(ws)
    r, eps = run_users(ws, tmp_path, "Pacer", 2, 2, f"/bye?after=2&code={code}", code=1 if code != 1000 else 0)
    seen = since(ws, before)
    assert r["exceptions"] == [] and seen["closes"] >= 6, seen  # (about 8 a user in 2 s: 2 calls 0.1 s apart)
    connects = eps[("WS", f"/bye?after=2&code={code}")]  # its requests: the handshakes and the closes
    opened = connects["requests"] - connects["failures"]
    assert 0 <= seen["connections"] - opened <= 2  # (a reconnect still in its handshake)
    if code == 1000:
        assert r["aggregate"]["failures"] == 0, r["errors"]
        return
    calls = eps[("WSC", "hello")]["failures"]  # (a call that met the close: counted there, not twice)
    assert 0 <= seen["closes"] - (connects["failures"] + calls) <= 2 and connects["failures"] > 0, (seen, eps)
    assert {e["message"] for e in r["errors"]} == {"server closed the connection (WebSocket close 1011: kicked)"}


def test_users_waiting_on_a_silent_server_stop_on_time(ws, tmp_path):
    before = ws_counts(ws)
    t0 = time.monotonic()
    r, eps = run_users(ws, tmp_path, "Talker", 3, 2, "/silent", timeout=100)
    assert time.monotonic() - t0 < 20  # the run is 2 s; start-up and exit on a starved host
    assert since(ws, before)["received"] == 3  # one message each, never answered
    assert eps[("WS", "/silent")]["requests"] == 3 and ("WSC", "hello") not in eps and ("WSC", "blob") not in eps


@pytest.mark.slow
@pytest.mark.serial  # a thousand handshakes at once: a Python server on a busy machine is slow to take them
def test_a_thousand_waiting_connections_and_the_memory_each_took(ws, tmp_path):
    """-c 1000 against replies 3 s late: every connection open and waiting. The summary's memory a
    connection is the kernel's high-water mark (VmHWM) less the resident memory before the run, shared
    over the connections opened: checked against the result's own figures, and bounded (bench/ measures
    it at 10,000: docs/websocket.md)."""
    out = tmp_path / "r.json"
    before = ws_counts(ws)
    p = squall("bench", f"ws://{ws}/delay?ms=3000", "-c", 1000, "-t", "6s", "--json", out)
    assert p.returncode == 0, p.stderr
    r = json.loads(out.read_text())
    opened = r["connect"]["requests"]
    assert opened == 1000 and since(ws, before)["connections"] == 1001  # (and the one before the run)
    process = r["generator"]["process"]
    grew = process["rss_peak_bytes"] - process["rss_start_bytes"]
    line = next(x for x in p.stdout.splitlines() if x.startswith("Memory"))
    assert f"{grew / opened / 1000:.2f} KB a connection" in line, line
    assert grew / opened < 20_000, line

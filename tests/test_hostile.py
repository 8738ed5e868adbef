"""Memory bounded whatever the server sends (issue 26). Each behaviour of tests/servers/hostile_server.py
against the squall process as a user runs it (bench, -f, mqtt): its peak RSS stays within the engine's
bound, and the requests fail with the error that says what happened, counted in the result.

Peak RSS is the process's own high-water mark (VmHWM), from the rusage wait4 returns for it. The bound of
each test is the same command's peak against a well-behaved server, measured in the same test (the
interpreter, the engine, the allocator), plus what the engine may keep of the hostile stream (its
documented limit, twice over for a buffer that doubles as it grows) plus 16 MiB for the allocator's
arenas and the pages a run touches (the runs here vary by less than 4 MiB). The servers send 256 MiB or
more, so a client that keeps what comes is far past it: before the limits these runs peaked at 272-800
MiB (the commit that added this file says each)."""

import csv
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from support import Mosquitto, serving, wait_until

FILES = Path(__file__).parent / "locustfiles"
MiB = 1024 * 1024
SLACK = 16  # MiB: see the module's doc
HEAD = 64 * 1024  # the engine's limits (docs/numbers.md, "What a server may send")
HEADER_BLOCK = 256 * 1024
KEPT_BODY = 64 * MiB


def measured(*args, env=None, timeout=120):
    """Runs `squall ARGS` to completion: (exit code, stdout, stderr, peak RSS in MiB)."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "squall", *map(str, args)], stdout=out, stderr=err, text=True, env=env
        )
        timer = threading.Timer(timeout, proc.kill)
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait again
        out.seek(0)
        err.seek(0)
        assert proc.returncode != -9, f"killed after {timeout} s: {err.read()[-2000:]}"
        return proc.returncode, out.read(), err.read(), usage.ru_maxrss / 1024


def bench(url, tmp_path, *args):
    """`squall bench URL -n 2 -c 1`: (the result's errors as {message: count}, peak RSS in MiB)."""
    out = tmp_path / "bench.json"
    code, _, stderr, peak = measured("bench", url, "-n", 2, "-c", 1, "-q", "--timeout", "20s", "--json", out, *args)
    assert code in (0, 1), stderr
    result = json.loads(out.read_text())
    return {e["message"]: e["count"] for e in result["errors"]}, peak


def script(url, tmp_path, path, *args, requests=2, env=()):
    """`squall -f hostile.py` (one user, GET `path` `requests` times): (failures as {message: count},
    peak RSS in MiB)."""
    prefix = tmp_path / "run"
    env = dict(os.environ, HOSTILE_PATH=path, STOP_AFTER_REQUESTS=str(requests), **dict(env))
    argv = ["-f", FILES / "hostile.py", "-H", url, "--headless", "-u", 1, "-t", "60s", "--csv", prefix, *args]
    code, _, stderr, peak = measured(*argv, env=env)
    assert code in (0, 1), stderr[-3000:]
    with open(f"{prefix}_failures.csv") as f:
        return {r["Error"]: int(r["Occurrences"]) for r in csv.DictReader(f)}, peak


@pytest.mark.parametrize(
    "mode, error",
    [
        ("chunk-line", "too large: chunk size line above 4096 bytes"),
        ("trailers", "too large: trailers above 64 KiB"),
        # Bounded before issue 26 too (64 KiB, 256 fields), and said so now as too large.
        ("head", "too large: response head above 64 KiB"),
        ("many-headers", "too large: response head of more than 256 header fields"),
    ],
)
def test_http1_heads_and_chunked_framing_are_bounded(mode, error, tmp_path):
    with serving("hostile_server.py", mode, 256 * MiB) as port:
        _, baseline = bench(f"http://127.0.0.1:{port}/ok", tmp_path)
        errors, peak = bench(f"http://127.0.0.1:{port}/", tmp_path)
    assert errors == {error: 2}
    assert peak <= baseline + 2 * HEAD / MiB + SLACK, (peak, baseline)


@pytest.mark.parametrize(
    "mode, error",
    [
        # 2 GB in 2 s before (the issue); the header block was kept whole until END_HEADERS.
        ("h2-continuation", "too large: response header block above 256 KiB (HTTP/2 CONTINUATION frames past it)"),
        # PING acknowledgements queued without end for a server that does not read them.
        ("h2-ping", "invalid HTTP response: PING or SETTINGS flood: 1000 acknowledgements unread"),
    ],
)  # fmt: skip
def test_bench_http2_holds_no_more_than_a_header_block(mode, error, nginx, tmp_path):
    _, baseline = bench(nginx.h2c_url + "/", tmp_path, "--http2")
    with serving("hostile_server.py", mode, 256 * MiB) as port:
        errors, peak = bench(f"http://127.0.0.1:{port}/", tmp_path, "--http2")
    assert errors == {error: 2}
    assert peak <= baseline + HEADER_BLOCK / MiB + SLACK, (peak, baseline)


@pytest.mark.parametrize("mode", ["body-length", "body-chunked", "body-close"])
def test_a_script_keeps_at_most_64_MiB_of_a_body(mode, tmp_path):
    """However the body is framed, a script's response keeps at most 64 MiB, and the request fails."""
    with serving("hostile_server.py", mode, 384 * MiB) as port:
        url = f"http://127.0.0.1:{port}"
        failures, baseline = script(url, tmp_path, "/ok")
        assert failures == {}
        failures, peak = script(url, tmp_path, "/")
    assert failures == {"too large: response body above 64 MiB, the most kept for a script": 2}
    assert peak <= baseline + 2 * KEPT_BODY / MiB + SLACK, (peak, baseline)


def test_a_script_over_http2_keeps_at_most_64_MiB_of_a_body(nginx, tmp_path):
    """The same over the h2 crate (one request: the test server answers one stream a connection)."""
    _, baseline = script(nginx.h2c_url, tmp_path, "/", "--http2", requests=1)
    with serving("hostile_server.py", "h2-body", 256 * MiB) as port:
        failures, peak = script(f"http://127.0.0.1:{port}", tmp_path, "/", "--http2", requests=1)
    assert failures == {"too large: response body above 64 MiB, the most kept for a script": 1}
    assert peak <= baseline + 2 * KEPT_BODY / MiB + SLACK, (peak, baseline)


def test_a_script_over_http2_refuses_a_header_block_above_256_KiB(nginx, tmp_path):
    """The h2 crate bounded it before (16 MiB, 68 MB of RSS in the issue), but said the server had
    closed the connection: now the same bound as bench's client, said as what it is."""
    _, baseline = script(nginx.h2c_url, tmp_path, "/", "--http2", requests=1)
    with serving("hostile_server.py", "h2-continuation", 256 * MiB) as port:
        failures, peak = script(f"http://127.0.0.1:{port}", tmp_path, "/", "--http2", requests=1)
    [(message, count)] = failures.items()
    assert message.startswith("too large: response header block above 256 KiB"), message
    assert count >= 1  # the run stops at its first request, or a few more that were under way
    assert peak <= baseline + HEADER_BLOCK / MiB + SLACK, (peak, baseline)


def test_cookies_a_server_sets_without_end_stay_within_8_KiB_a_request(tmp_path):
    """A new 1,000-byte cookie on each of 300 responses: what the server received is the ground truth.
    Before, the 300th request carried 300 KB of cookies; now each carries the newest that fit in 8 KiB."""
    with serving("hostile_server.py", "cookies", 1000) as port:
        url = f"http://127.0.0.1:{port}"
        failures, _ = script(url, tmp_path, "/", requests=300)
        sizes = json.loads(urlopen(f"{url}/__cookies"))
    assert failures == {}
    assert len(sizes) >= 300 and sizes[0] == 0
    assert max(sizes) <= 8 * 1024, max(sizes)
    # Each cookie is "cN=" and 1,000 bytes, "; " between: 7 or 8 of them fill 8 KiB.
    assert all(s >= 7 * 1003 for s in sizes[10:]), sizes[10:20]


def test_cookies_larger_than_4_KiB_are_ignored(tmp_path):
    """As browsers do (RFC 6265bis): the issue's server set 10 KB cookies, and each request carried all
    of them."""
    with serving("hostile_server.py", "cookies", 10_000) as port:
        url = f"http://127.0.0.1:{port}"
        failures, _ = script(url, tmp_path, "/", requests=20)
        sizes = json.loads(urlopen(f"{url}/__cookies"))
    assert failures == {} and len(sizes) >= 20
    assert set(sizes) == {0}


@pytest.mark.slow
def test_redirects_through_many_hosts_leave_a_user_10_connections(tmp_path):
    """A chain of 20 redirects, each to a port of its own (an origin each): a user keeps connections to
    the 10 origins it used last (a requests Session's 10 pools), not one on every origin it went through,
    and never more than 10 at once: urllib3 makes an eleventh host's pool, closing the least recently
    used one's connections, before it connects, and so does squall (before, the eleventh connection
    opened first and the evicted one closed at the request's end: 11 were seen on a loaded host).
    What the server counts open once nothing has opened or closed for 0.1 s is the ground truth (a count
    taken as a hop opens a connection holds closes the server's threads have yet to notice): each hop's
    response waits 0.15 s, so the count settles during every hop, the hop's connection in use, and
    past the tenth hop it is the bound itself. The test's own asking connections leave the count when
    they ask, not when the server notices their close."""
    with serving("hostile_server.py", "hops", 150) as port:
        url = f"http://127.0.0.1:{port}"
        env = dict(os.environ, HOSTILE_PATH="/hop/0", STOP_AFTER_REQUESTS="1")
        argv = ["-f", FILES / "hostile.py", "-H", url, "--headless", "-u", 1, "-t", "30s", "--csv", tmp_path / "run"]
        with tempfile.TemporaryFile("w+") as err:
            proc = subprocess.Popen([sys.executable, "-m", "squall", *map(str, argv)], env=env, stderr=err)
            try:
                wait_until(lambda: json.loads(urlopen(f"{url}/__open")) > 0, "a connection from squall", proc)
                seen = []
                while proc.poll() is None:
                    seen.append(json.loads(urlopen(f"{url}/__open")))
                    time.sleep(0.05)
            finally:
                proc.wait(timeout=60)
            err.seek(0)
            assert proc.returncode == 0, err.read()[-2000:]
    with open(tmp_path / "run_stats.csv") as f:
        [row] = [r for r in csv.DictReader(f) if r["Name"] == "/hop/0"]
    assert row["Request Count"] == "1" and row["Failure Count"] == "0", row
    # The chain's 21 responses take 3.15 s, its last 10 hops 1.5 s: a count a 0.15 s or so.
    assert seen.count(10) >= 3 and max(seen) <= 10, str(seen)


@pytest.mark.parametrize("version", ["3.1.1", "5"])
def test_mqtt_refuses_a_packet_above_16_MiB_at_its_header(version, tmp_path_factory, tmp_path):
    """A broker announcing MQTT's largest PUBLISH (256 MiB) and sending it as it goes: before, each
    connection buffered what came; now it fails at the packet's first bytes."""
    broker = Mosquitto(tmp_path_factory.mktemp("mosquitto"))
    try:
        args = ["mqtt", "-u", 2, "-n", 20, "--mqtt-version", version, "--json", tmp_path / "ok.json", "-q"]
        code, _, stderr, baseline = measured(*args, "--broker", broker.url)
        assert code == 0, stderr
    finally:
        broker.stop()
    with serving("hostile_server.py", "mqtt-big", 256 * MiB) as port:
        args = ["mqtt", "-u", 2, "-t", "2s", "--mqtt-version", version, "--json", tmp_path / "r.json", "-q"]
        code, _, stderr, peak = measured(*args, "--broker", f"mqtt://127.0.0.1:{port}")
    result = json.loads((tmp_path / "r.json").read_text())
    messages = {e["message"] for e in result["errors"]}
    big = "too large: MQTT packet of 268435455 bytes from the broker, above the 16777216 accepted"
    assert big in messages, (messages, stderr[-2000:])
    assert peak <= baseline + SLACK, (peak, baseline)


def urlopen(url):
    import urllib.request

    with urllib.request.urlopen(url, timeout=10) as resp:
        return resp.read()

"""Tests against ground truth the issue asked for: a server of fixed latency, Poisson gaps, connection
counts from the server's side, losses forced at the broker and counted by an independent subscriber,
`from locust import ...` without Locust installed, scripted responses timed against the send times a
server wrote in them."""

import json
import os
import statistics
import subprocess
import sys
import time

import pytest

from support import HERE, Mosquitto, self_signed, serving, squall

pytestmark = pytest.mark.serial

DELAY = 0.020


@pytest.fixture(scope="module")
def fixed_delay_server():
    """tests/servers/delay_server.py: every answer after exactly DELAY (in a process of its own)."""
    with serving("delay_server.py", DELAY * 1000) as port:
        yield f"http://127.0.0.1:{port}/"


def test_closed_model_latency_against_a_fixed_20ms_server(fixed_delay_server, tmp_path):
    out = tmp_path / "r.json"
    p = squall("bench", fixed_delay_server, "-c", 2, "-n", 200, "--json", out, "-q")
    assert p.returncode == 0, p.stderr
    agg = json.loads(out.read_text())["aggregate"]
    # Every answer takes the server's 20 ms; keep-alive, so the connect is timed apart (docs/numbers.md).
    assert agg["min_us"] >= 20_000
    assert 20_000 <= agg["percentiles_us"]["50"] <= 21_000, agg["percentiles_us"]


@pytest.mark.slow
def test_poisson_arrivals_have_exponential_gaps(nginx, tmp_path):
    """The intended send times of `--arrival poisson` (nginx logs each request's arrival to the ms)
    have gaps with a coefficient of variation near 1 (exponential), where constant ones have near 0."""
    nginx.reset_log()
    p = squall("bench", nginx.url + "/", "--rate", 200, "--arrival", "poisson", "-t", "5s", "-c", 20, "-q")
    assert p.returncode == 0, p.stderr
    times = sorted(t for t, _ in nginx.log())
    gaps = [b - a for a, b in zip(times, times[1:])]
    cv = statistics.pstdev(gaps) / statistics.mean(gaps)
    # For ~1,000 exponential gaps the CV's standard error is about 0.03; millisecond logging and
    # scheduling add a little to short gaps: 0.85-1.15.
    assert 0.85 <= cv <= 1.15, cv


@pytest.mark.parametrize("extra, per_request", [(["--no-keepalive"], True), ([], False)])
def test_connection_counts_from_the_servers_side(nginx, tmp_path, extra, per_request):
    """Keep-alive off: one connection per request; on: the -c connections carry them all (nginx's own
    connection numbers, not squall's)."""
    nginx.reset_log()
    p = squall("bench", nginx.url + "/", "-c", 4, "-n", 200, *extra, "-q")
    assert p.returncode == 0, p.stderr
    log = nginx.log()
    connections = {c for _, c in log}
    assert len(log) == 200
    assert len(connections) == (200 if per_request else 4), len(connections)


def test_http2_streams_share_their_connections(nginx, tmp_path):
    nginx.reset_log()
    p = squall("bench", nginx.tls_url + "/", "--http2", "--insecure", "-c", 2, "--h2-streams", 8, "-n", 400, "-q")
    assert p.returncode == 0, p.stderr
    log = nginx.log()
    assert len(log) == 400 and len({c for _, c in log}) == 2


@pytest.mark.slow
def test_mqtt_losses_forced_at_the_broker_are_what_the_broker_says_it_dropped(tmp_path):
    """mosquitto keeps at most 10 messages queued for a subscriber: a burst to squall's verifying
    subscriber loses some. squall must say lost > 0 and exit 4, and its count must be the broker's own:
    $SYS/broker/publish/messages/dropped (squall's subscriber is the only one)."""
    (tmp_path / "m").mkdir()
    broker = Mosquitto(tmp_path / "m", max_queued=10, extra=["sys_interval 1"])
    out = tmp_path / "m.json"
    try:
        p = squall(
            "mqtt", "--broker", broker.url, "-u", 20, "-n", 200, "--qos", 1, "--inflight", 50, "--verify",
            "--verify-wait", "3s", "--json", out, "-q", timeout=120,
        )  # fmt: skip
        d = json.loads(out.read_text())["mqtt"]["delivery"]
        assert p.returncode == 4 and d["lost"] > 0, (p.returncode, d)
        assert d["sent"] == 4000 and d["delivered"] + d["lost"] == 4000
        time.sleep(1.5)  # $SYS is published every second (sys_interval 1)
        dropped = subprocess.run(
            ["mosquitto_sub", "-p", str(broker.port), "-t", "$SYS/broker/publish/messages/dropped", "-C", "1",
             "-W", "5"],
            capture_output=True, text=True, timeout=10,
        )  # fmt: skip
        assert int(dropped.stdout.strip()) == d["lost"], (dropped.stdout, d)
    finally:
        broker.stop()


def test_from_locust_import_works_without_locust_installed(nginx, tmp_path):
    """A finder that refuses the real `locust` package stands in for an environment without it."""
    blocker = tmp_path / "sitecustomize.py"
    blocker.write_text(
        "import sys\n"
        "class NoLocust:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'locust' or name.startswith('locust.'):\n"
        "            if not any(m == name for m in sys.modules):\n"
        "                raise ModuleNotFoundError(name)\n"
        "sys.meta_path.insert(0, NoLocust())\n"
    )
    env = dict(os.environ, PYTHONPATH=f"{tmp_path}:{os.environ.get('PYTHONPATH', '')}")
    check = subprocess.run([sys.executable, "-c", "import locust"], env=env, capture_output=True, text=True)
    assert check.returncode != 0  # the real package is out of reach
    p = squall("-f", HERE / "locustfiles" / "dashboard.py", "-H", nginx.url, "--headless", "-t", "1s", env=env)
    assert p.returncode == 0, p.stderr


@pytest.mark.slow
def test_an_open_model_ramp_follows_the_line_second_by_second(nginx, tmp_path):
    """--rate 400 --ramp 4s: the intended rate climbs linearly to 400/s over 4 s, then holds. The
    requests nginx received in each second (its own arrival times, against the run's start) are the
    integral of that line: 50, 150, 250, 350, then 400 a second."""
    nginx.reset_log()
    out = tmp_path / "r.json"
    p = squall("bench", nginx.url + "/", "--rate", 400, "--ramp", "4s", "-t", "6s", "-c", 20, "--json", out, "-q")
    assert p.returncode == 0, p.stderr
    start = json.loads(out.read_text())["start_unix"]
    per_second = [0] * 6
    for t, _ in nginx.log():
        k = int(t - start)
        if 0 <= k < 6:
            per_second[k] += 1
    expected = [50, 150, 250, 350, 400, 400]
    # Constant spacing: a second holds its share give or take the arrivals on its edges, and nginx
    # stamps arrivals to the millisecond; the response time (under 1 ms here) moves a few across.
    assert all(abs(got - want) <= 8 for got, want in zip(per_second, expected)), per_second


@pytest.mark.slow
@pytest.mark.parametrize("https, path", [(False, "/"), (True, "/"), (False, "/hop")])
def test_responses_read_late_are_timed_when_they_arrived(tmp_path, https, path):
    """200 users with think time: the engine reads their responses in batches, up to a millisecond after
    they arrive (script/mod.rs `DEFER`), and times each by the kernel's receive stamp. Ground truth:
    tests/servers/stamp_server.py puts in each response the CLOCK_MONOTONIC time it sent it, and the
    locustfile notes the same clock just before and after each call. Through a redirect, the time the
    redirect waited to be read is the generator's, not the server's: it must not count."""
    out = tmp_path / "stamps.jsonl"
    env = dict(os.environ, STAMPED_OUT=str(out), STAMPED_PATH=path)
    tls = []
    if https:  # TLS reads its records from the same stamped socket reads
        self_signed(tmp_path)
        tls = [tmp_path / "cert.pem", tmp_path / "key.pem"]
    with serving("stamp_server.py", *tls) as port:
        p = squall(
            "-f", HERE / "locustfiles" / "stamped.py", "-H", f"http{'s' * https}://127.0.0.1:{port}", "--headless",
            "-u", 200, "-r", 200, "-t", "4s", env=env,
        )  # fmt: skip
    assert p.returncode == 0, p.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) > 5_000, len(rows)
    # When the user got the response, after the server sent it: deferred reads wait for the next
    # timer, up to 1 ms (median about 0.5 ms; 0.04 ms when every response woke the engine, measured).
    seen = sorted(after - sent for _, _, after, sent in rows)
    # When squall timed the response's end, after the server sent it. On loopback the kernel stamps
    # the segment inside the server's send call, a few µs after its clock read; the user's `before`
    # is a few µs ahead of the engine's own start, so this may read a few µs early. Measured at p1,
    # p50 and p99: -1.3, 0.3 and 16 µs, over TLS 0.9, 2.5 and 15 µs, through the redirect 3.4, 5.2
    # and 34 µs (the second request's trip to the server counts there). Timed by the read instead: p50 20 µs
    # and p99 585 µs without deferral (asyncio server), p50 half the deferral with it; through the
    # redirect without subtracting the redirect's own wait to be read, p50 725 µs (measured).
    #
    # Two regimes. Reads are stamped once the engine has met 100 chances to defer (script/mod.rs
    # `WANT_STAMPS`: about 0.4 s into this run, so that a run without think time never pays for
    # stamps); until then a response that arrives while Python makes users and runs their first tasks
    # is timed when the script next polls, one pass of the hub later, as in Locust's gevent loop
    # (measured in the first second: p99 130-220 µs, through the redirect 290-440 µs; 8 runs). From
    # the second second on, the stamped regime the bounds below are about (measured there: p99 16-40
    # µs, through the redirect 77-96 µs).
    start = min(before for before, *_ in rows)
    timed = sorted(before + elapsed - sent for before, elapsed, _, sent in rows if before >= start + 1)
    early = sorted(before + elapsed - sent for before, elapsed, _, sent in rows if before < start + 1)
    q = lambda xs, p: xs[int(p * (len(xs) - 1))] * 1e6
    assert q(seen, 0.5) > 300, ("the reads were not deferred", q(seen, 0.5))
    # Bounds well clear of the measurement and of the failures above. A loaded machine preempts the
    # server between its clock read and its send now and then: CI's host read p99 337 µs over TLS
    # (2026-11-26) where a quiet one reads 15-40, so the tail is judged at p98, which a failure of the
    # stamps on more than 2% of the responses (each late by up to the 1 ms deferral) still crosses.
    p1, p50, p98 = (q(timed, p) for p in (0.01, 0.5, 0.98))
    assert p1 > -100 and p50 < 100 and p98 < 300, (p1, p50, p98)
    # Before stamps: late by a pass of the hub at most, not by the deferral (p50 half of it, above).
    assert q(early, 0.5) < 100 and q(early, 0.99) < 2_000, (q(early, 0.5), q(early, 0.99))


HEAD_DELAY_MS, BODY_DELAY_MS = 20, 30


@pytest.mark.slow
@pytest.mark.parametrize("how", ["bench", "script"])
def test_the_latency_breakdown_reads_the_servers_delays(tmp_path, how):
    """delay_server.py sends each response's head 20 ms after the request and its body 30 ms after the
    head: waiting (request written to first byte) must read 20 ms and receiving (first byte to last)
    30 ms; connect counts the connections opened, TLS none (plain HTTP)."""
    out = tmp_path / "r.json"
    with serving("delay_server.py", HEAD_DELAY_MS, BODY_DELAY_MS) as port:
        url = f"http://127.0.0.1:{port}"
        if how == "bench":
            p, conns = squall("bench", url + "/", "-c", 2, "-n", 100, "--json", out, "-q"), 2
        else:  # HttpUsers pacing a request every 50 ms: their reads may be deferred and stamped
            p = squall(
                "-f", HERE / "locustfiles" / "dashboard.py", "-H", url, "--headless", "-u", 4, "-r", 4, "-t", "3s",
                "--result-json", out,
            )  # fmt: skip
            conns = 4
    assert p.returncode == 0, p.stderr
    agg = json.loads(out.read_text())["aggregate"]
    t = agg["timings"]
    assert t["waiting"]["count"] == t["receiving"]["count"] == agg["requests"] >= 50
    assert t["connect"]["count"] == conns and t["tls"]["count"] == 0
    # Measured on a quiet host: medians 20.4 ms waiting and 30.2-30.3 ms receiving. The client reads its
    # clock after the write and at the first bytes; a host busy elsewhere delays either by a scheduler
    # timeslice, which moves time between the phases (their sum stays): under two CPU-bound processes on
    # this 2-core host the waiting median read 23.1 ms and a minimum 19.4 ms (a late clock read after
    # the write). 5 ms bounds on the medians keep that out and still fail a swapped, missing or
    # whole-response phase (0 or 50 ms).
    w, r = t["waiting"]["percentiles_us"]["50"], t["receiving"]["percentiles_us"]["50"]
    assert abs(w - HEAD_DELAY_MS * 1000) <= 5000, t["waiting"]
    assert abs(r - BODY_DELAY_MS * 1000) <= 5000, t["receiving"]
    # What the phases leave of the response time: the write, the connects (2 or 4 of 100 requests),
    # reading the clock and, for a script, the request's wait for the engine: measured 0.05-0.2 ms a
    # request; 2 ms leaves a loaded host room and still fails a phase left out (20 or 30 ms).
    rest = agg["mean_us"] - t["waiting"]["mean_us"] - t["receiving"]["mean_us"]
    assert -0.002 * agg["mean_us"] <= rest <= 2000, (rest, agg["mean_us"])


def test_tls_handshakes_and_connects_are_the_connections_the_server_saw(nginx, tmp_path):
    """Over TLS each connection has one handshake: the breakdown counts as many TLS handshakes and
    connects as nginx saw connections, and every request waited for its response."""
    nginx.reset_log()
    out = tmp_path / "r.json"
    p = squall("bench", nginx.tls_url + "/", "--insecure", "-c", 3, "-n", 300, "--json", out, "-q")
    assert p.returncode == 0, p.stderr
    t = json.loads(out.read_text())["aggregate"]["timings"]
    conns = len({c for _, c in nginx.log()})
    assert t["tls"]["count"] == t["connect"]["count"] == conns == 3
    assert t["waiting"]["count"] == 300 and t["tls"]["min_us"] > 0
    # HTTP/2 streams are not broken down (stats/timing.rs): no `timings` at all.
    p = squall("bench", nginx.tls_url + "/", "--http2", "--insecure", "-c", 1, "-n", 50, "--json", out, "-q")
    assert p.returncode == 0, p.stderr
    assert "timings" not in json.loads(out.read_text())["aggregate"]


def test_the_open_models_connections_are_those_it_opened(nginx, tmp_path):
    """At 200 req/s against nginx a handful of connections carry the load whatever the cap (-c 50):
    the time series' connections are those opened, as nginx counts them, not the cap."""
    nginx.reset_log()
    out = tmp_path / "r.json"
    p = squall("bench", nginx.url + "/", "--rate", 200, "-c", 50, "-t", "2s", "--json", out, "-q")
    assert p.returncode == 0, p.stderr
    r = json.loads(out.read_text())
    conns = len({c for _, c in nginx.log()})
    users = [s["users"] for s in r["timeseries"]]
    assert users[-1] == max(users) == r["connect"]["requests"] == conns < 50, (users, conns)
    assert r["load"]["connections"] == 50, "the cap is still the load's"

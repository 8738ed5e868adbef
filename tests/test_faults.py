"""The fault suite: a proxy (tests/servers/fault_proxy.py) between squall and a real server injects one
fault; squall must keep running, count the failures under the right kind, end on time, exit with the
documented code, and count what the server saw (within the requests in flight).

Each fault for each protocol: HTTP/1.1 (bench against nginx), HTTP/2 (bench against nginx's TLS port:
the proxy relays the TLS bytes, so a fault within the first ~2.5 KB hits the handshake and one past it
hits the streams), and MQTT (against mosquitto, whose log says what it received)."""

import contextlib
import json
import ssl
import time

import pytest

from support import Mosquitto, serving, squall

# A fault after this many bytes from nginx's TLS port falls mid-connection, a few dozen HTTP/2 answers
# in: the handshake (a 2048-bit RSA certificate) and the connection preface take under 2,500.
PAST_TLS_HANDSHAKE = 4000
# MQTT 3.1.1: CONNACK and PUBACK are 4 bytes each. A fault after 4 bytes comes right after the CONNACK,
# one after 44 when ten messages have been acknowledged.
CONNACK = 4
TEN_PUBACKS = CONNACK + 10 * 4


@contextlib.contextmanager
def proxy(upstream_port, fault, arg=None, every=1, skip=0):
    args = (fault, *([arg] if arg is not None else []), "--every", every, "--skip", skip)
    with serving("fault_proxy.py", upstream_port, *args) as port:
        yield port


def bench(port, tmp_path, *args, h2=False):
    out = tmp_path / "r.json"
    url, extra = (f"https://127.0.0.1:{port}/", ("--http2", "--insecure")) if h2 else (f"http://127.0.0.1:{port}/", ())
    began = time.monotonic()
    p = squall("bench", url, *extra, *args, "--json", out, "-q", timeout=120)
    took = time.monotonic() - began
    assert "Traceback" not in p.stderr, p.stderr
    return p, json.loads(out.read_text()), took


def h2_bench(nginx, tmp_path, fault, arg, *args, every=1, skip=0):
    """`squall bench --http2` through the proxy to nginx's TLS port; also what nginx logged meanwhile."""
    nginx.reset_log()
    with proxy(nginx.tls_port, fault, arg, every, skip) as port:
        p, r, took = bench(port, tmp_path, *args, h2=True)
    return p, r, took, nginx.requests_logged()


def kinds(r):
    return {e["kind"]: e["count"] for e in r["errors"]}


def assert_nginx_saw(r, seen, failures_reached_it=True):
    """nginx logged every request squall counts a success; on top of those, at most the failures (when
    the fault let their requests through) and the requests still in flight when the run ended."""
    a = r["aggregate"]
    ok = a["requests"] - a["failures"]
    most = (a["requests"] if failures_reached_it else ok) + r["abandoned"]
    assert ok <= seen <= most, (seen, a["requests"], a["failures"], r["abandoned"])


def test_latency_is_measured_and_nothing_fails(nginx, tmp_path):
    nginx.reset_log()
    with proxy(nginx.port, "latency", 50) as port:
        p, r, took = bench(port, tmp_path, "-c", 4, "-t", "2s")
    assert p.returncode == 0 and r["aggregate"]["failures"] == 0
    # The proxy holds every answer 50 ms: no response can be faster (connect is timed apart).
    assert r["aggregate"]["min_us"] >= 50_000 and r["aggregate"]["percentiles_us"]["50"] < 80_000
    assert r["aggregate"]["requests"] <= nginx.requests_logged() <= r["aggregate"]["requests"] + r["abandoned"]
    assert took < 2 + 5


def test_resets_are_counted_as_resets_and_the_run_goes_on(nginx, tmp_path):
    nginx.reset_log()
    with proxy(nginx.port, "reset", 0, every=2) as port:  # every other connection: reset before any answer
        p, r, took = bench(port, tmp_path, "-c", 4, "-t", "2s")
    assert p.returncode == 0, p.stderr  # some succeeded
    assert kinds(r).get("reset", 0) > 0 and r["aggregate"]["requests"] > r["aggregate"]["failures"]
    # nginx answered every request the proxy forwarded: the successes, and the reset ones.
    seen = nginx.requests_logged()
    assert (
        r["aggregate"]["requests"] - r["aggregate"]["failures"] <= seen <= r["aggregate"]["requests"] + r["abandoned"]
    )
    assert took < 2 + 5


@pytest.mark.parametrize("fault, arg", [("truncate", 30), ("halfclose", None)])
def test_answers_cut_short_fail_as_closed_connections(nginx, tmp_path, fault, arg):
    nginx.reset_log()
    with proxy(nginx.port, fault, arg) as port:
        p, r, took = bench(port, tmp_path, "-c", 2, "-n", 20, "--timeout", "2s")
    assert p.returncode == 1, (p.stdout, p.stderr)  # every request failed
    assert set(kinds(r)) <= {"closed", "protocol"} and sum(kinds(r).values()) == r["aggregate"]["failures"] == 20
    assert_nginx_saw(r, nginx.requests_logged())  # each request went through; its answer did not
    assert took < 30


def test_a_stalled_server_times_out_on_time(nginx, tmp_path):
    nginx.reset_log()
    with proxy(nginx.port, "stall") as port:
        p, r, took = bench(port, tmp_path, "-c", 2, "-t", "2s", "--timeout", "300ms")
    assert p.returncode == 1, (p.stdout, p.stderr)
    assert set(kinds(r)) == {"timeout"} and r["aggregate"]["failures"] >= 2
    assert_nginx_saw(r, nginx.requests_logged())
    assert took < 2 + 0.3 + 5  # the duration, one timeout, and start-up


def test_a_bandwidth_limit_slows_but_does_not_fail(nginx, tmp_path):
    nginx.reset_log()
    with proxy(nginx.port, "bandwidth", 4000) as port:
        p, r, took = bench(port, tmp_path, "-c", 1, "-n", 30)
    assert p.returncode == 0 and r["aggregate"]["failures"] == 0 and r["aggregate"]["requests"] == 30
    assert nginx.requests_logged() == 30
    # 30 answers of wire_bytes / 30 bytes each at 4,000 bytes a second.
    assert r["duration_s"] >= 0.8 * r["aggregate"]["wire_bytes"] / 4000, r["duration_s"]


@pytest.mark.parametrize("h2, stall_after", [(False, 2000), (True, PAST_TLS_HANDSHAKE)], ids=["http1", "http2"])
def test_a_connection_that_stalls_mid_run_is_replaced(nginx, tmp_path, h2, stall_after):
    """One connection (the second: the first is the preflight's) stops answering after a dozen (HTTP/1.1)
    or a few dozen (HTTP/2) answers. Its requests time out, and the next ones go on a new connection that
    answers: one stalled connection must not turn the rest of the run into timeouts (HTTP/2 reused it
    until the end)."""
    streams = 2 if h2 else 1
    nginx.reset_log()
    with proxy(nginx.tls_port if h2 else nginx.port, "stall", stall_after, every=2) as port:
        more = ("--h2-streams", streams) if h2 else ()
        p, r, took = bench(port, tmp_path, "-c", 1, *more, "-t", "2s", "--timeout", "300ms", h2=h2)
    a = r["aggregate"]
    assert p.returncode == 0, p.stderr
    # The requests on the stalled connection, one per stream, and no more: the connection after it is
    # the proxy's third, which it relays untouched.
    assert set(kinds(r)) == {"timeout"} and 1 <= a["failures"] <= streams, r["errors"]
    assert a["requests"] - a["failures"] > 100  # the new connection's answers (thousands unless starved)
    assert_nginx_saw(r, nginx.requests_logged())  # the timed-out requests reached nginx
    assert took < 2 + 5


def test_http2_latency_is_measured_and_nothing_fails(nginx, tmp_path):
    p, r, took, seen = h2_bench(nginx, tmp_path, "latency", 50, "-c", 2, "-t", "2s")
    a = r["aggregate"]
    assert p.returncode == 0 and a["failures"] == 0 and r["errors"] == [], p.stderr
    # Every answer is held 50 ms by the proxy; 80 ms leaves 30 for a loaded host, as for HTTP/1.1.
    assert a["min_us"] >= 50_000 and a["percentiles_us"]["50"] < 80_000
    assert_nginx_saw(r, seen)
    assert took < 2 + 5


@pytest.mark.parametrize("fault, kind", [("reset", "reset"), ("truncate", "closed"), ("halfclose", "closed")])
def test_http2_connections_broken_mid_stream_fail_their_streams(nginx, tmp_path, fault, kind):
    """Every connection breaks a few dozen answers in: the streams in flight on it fail under the
    fault's kind (RST is a reset, FIN a close), the next requests go on a new connection."""
    streams = 4
    p, r, took, seen = h2_bench(
        nginx, tmp_path, fault, PAST_TLS_HANDSHAKE, "-c", 2, "--h2-streams", streams, "-t", "2s", "--timeout", "2s"
    )
    a = r["aggregate"]
    assert p.returncode == 0, p.stderr  # some succeeded
    assert set(kinds(r)) == {kind} and sum(kinds(r).values()) == a["failures"] > 0, r["errors"]
    assert a["requests"] > a["failures"]
    # A broken connection fails at most the streams it had in flight: no failure is counted twice.
    assert a["failures"] <= streams * r["connect"]["requests"], (a["failures"], r["connect"]["requests"])
    assert_nginx_saw(r, seen)  # the failed streams' requests may have reached nginx, or not
    assert took < 2 + 5


@pytest.mark.parametrize(
    "fault, arg, kind",
    [
        ("reset", 0, "reset"),
        ("truncate", 100, "closed"),
        ("halfclose", None, "closed"),
        ("stall", None, "connect_timeout"),
    ],
)
def test_http2_connections_that_never_complete_fail_every_request(nginx, tmp_path, fault, arg, kind):
    """The preflight connects (`--skip 1`), then every connection of the run breaks in its TLS handshake:
    each request fails as a connect failure of the fault's kind, nginx sees none, and the exit code is 1.
    A stalled handshake is a connect timeout, as over HTTP/1.1 (HTTP/2 called it a request timeout)."""
    p, r, took, seen = h2_bench(nginx, tmp_path, fault, arg, "-c", 2, "-n", 6, "--timeout", "500ms", skip=1)
    assert p.returncode == 1, (p.stdout, p.stderr)  # every request failed
    assert kinds(r) == {kind: 6} and r["aggregate"]["failures"] == r["aggregate"]["requests"] == 6, r["errors"]
    assert seen == 0
    assert took < 3 * 0.5 + 5  # -n 6 over 2 connections: three timeouts in a row at most, and start-up


def test_http2_a_stalled_handshake_on_some_connections_is_a_connect_timeout(nginx, tmp_path):
    p, r, took, seen = h2_bench(nginx, tmp_path, "stall", None, "-c", 2, "-t", "2s", "--timeout", "300ms", every=2)
    a = r["aggregate"]
    assert p.returncode == 0, p.stderr
    assert set(kinds(r)) == {"connect_timeout"} and a["failures"] >= 1, r["errors"]
    assert a["requests"] - a["failures"] > 100
    assert_nginx_saw(r, seen, failures_reached_it=False)  # a request that never connected never reached nginx
    assert took < 2 + 5


def test_http2_a_bandwidth_limit_slows_but_does_not_fail(nginx, tmp_path):
    n, bps = 30, 2000
    p, r, took, seen = h2_bench(nginx, tmp_path, "bandwidth", bps, "-c", 1, "-n", n)
    a = r["aggregate"]
    assert p.returncode == 0 and a["failures"] == 0 and a["requests"] == n == seen, (p.stderr, seen)
    # A lower bound on the bytes nginx sent on the run's one connection: its certificate in the handshake,
    # and per answer at least one TLS record (22 bytes of header, tag and type) holding a HEADERS frame
    # (9 + 1) and a DATA frame (9 + "hello\n"). The connection opened after the run's clock started.
    cert = len(ssl.PEM_cert_to_DER_cert((nginx.dir / "cert.pem").read_text()))
    assert r["duration_s"] >= (cert + n * (22 + 10 + 15)) / bps, r["duration_s"]
    assert took < 30


@pytest.mark.parametrize("fault, arg", [("reset", 100), ("truncate", 100), ("halfclose", None), ("stall", None)])
def test_http2_over_tls_a_handshake_that_fails_is_a_start_error(nginx, fault, arg):
    nginx.reset_log()
    with proxy(nginx.tls_port, fault, arg) as port:
        began = time.monotonic()
        p = squall(
            "bench", f"https://127.0.0.1:{port}/", "--http2", "--insecure", "-n", 5, "--timeout", "1s", "-q", timeout=60
        )
        took = time.monotonic() - began
    assert p.returncode == 3 and p.stderr.count("\n") == 1 and "Traceback" not in p.stderr, p.stderr
    assert "cannot connect" in p.stderr and nginx.requests_logged() == 0
    assert took < 1 + 5  # the stalled handshake gives up after the timeout


@pytest.fixture
def broker(tmp_path):
    (tmp_path / "m").mkdir()
    b = Mosquitto(tmp_path / "m", extra=["log_type debug"])  # a log line for each PUBLISH: the ground truth
    yield b
    b.stop()


def mqtt(broker, tmp_path, fault, arg, *args, every=1):
    """`squall mqtt --qos 1` through the proxy to the broker: (process, result, seconds taken)."""
    out = tmp_path / "m.json"
    with proxy(broker.port, fault, arg, every) as port:
        began = time.monotonic()
        p = squall("mqtt", "--broker", f"mqtt://127.0.0.1:{port}", "--qos", 1, *args, "--json", out, "-q")
        took = time.monotonic() - began
    assert "Traceback" not in p.stderr, p.stderr
    return p, json.loads(out.read_text()), took


def broker_received(broker):
    """PUBLISH packets the broker has received, by its own log ("Received PUBLISH from squall-..."): the
    verifying subscriber is not used, as the proxy would fault its connection too. Read once the count
    holds still for 0.2 s (bytes the proxy had already taken may still be on their way after the run)."""
    log = broker.dir / "mosquitto.log"

    def count():
        return sum(1 for line in log.read_text().splitlines() if "Received PUBLISH from squall-" in line)

    last, now = -1, count()
    while now != last:
        time.sleep(0.2)
        last, now = now, count()
    return now


def assert_broker_saw(m, received):
    """A message squall counts published was acknowledged, so the broker has it; the broker cannot have
    more than squall wrote (sent, less the never-sent): the difference is what was in flight when the
    fault hit (squall does not resend, so nothing arrives twice)."""
    assert m["published"] <= received <= m["sent"] - m["unsent"], (received, m["published"], m["sent"], m["unsent"])


def endpoint(r, method):
    return next(e for e in r["endpoints"] if e["method"] == method)


def test_mqtt_latency_is_measured_and_nothing_fails(broker, tmp_path):
    p, r, took = mqtt(broker, tmp_path, "latency", 50, "-u", 2, "--rate", 10, "-t", "2s")
    m = r["mqtt"]
    assert p.returncode == 0 and r["errors"] == [], p.stderr
    assert m["sent"] == m["published"] == 40 == broker_received(broker)
    # The CONNACK and every PUBACK are held 50 ms by the proxy.
    assert endpoint(r, "CONNECT")["min_us"] >= 50_000 and endpoint(r, "PUBLISH")["min_us"] >= 50_000
    assert took < 2 + 5


@pytest.mark.parametrize(
    "fault, arg, kind, code",
    [
        ("reset", TEN_PUBACKS, "reset", 0),  # ten acknowledged, then RST: those in flight fail
        ("truncate", TEN_PUBACKS, "closed", 0),  # the same with FIN
        ("halfclose", CONNACK, "closed", 1),  # FIN after the CONNACK: nothing is ever acknowledged
        ("stall", CONNACK, "ack_timeout", 1),  # silence after the CONNACK
    ],
)
def test_mqtt_connections_broken_mid_run_fail_what_was_in_flight(broker, tmp_path, fault, arg, kind, code):
    """Every connection breaks after its CONNACK (or ten PUBACKs) with 10 messages in flight: those fail
    under the fault's kind, the client reconnects and goes on; exit 0 if some were published, else 1."""
    p, r, took = mqtt(broker, tmp_path, fault, arg, "-u", 2, "-n", 20, "--inflight", 10, "--timeout", "500ms")
    m = r["mqtt"]
    assert p.returncode == code, p.stderr
    assert m["failed"] > 0 and (m["published"] > 0) == (code == 0)
    assert m["published"] + m["failed"] == m["sent"] == 40 and m["unsent"] == 0  # every message accounted for
    assert set(kinds(r)) == {kind} and endpoint(r, "PUBLISH")["failures"] == m["failed"], r["errors"]
    assert_broker_saw(m, broker_received(broker))
    # Each client: at most two broken connections (10 messages each), a timeout and a 250-ms pause each.
    assert took < 2 * (0.5 + 0.25) + 5


@pytest.mark.slow
def test_mqtt_a_connack_that_never_comes_is_a_connect_timeout(broker, tmp_path):
    """Every other connection stalls before its CONNACK: the client's connect times out, the messages that
    fell due meanwhile are counted unsent, and it publishes once a reconnect gets through."""
    p, r, took = mqtt(broker, tmp_path, "stall", None, "-u", 4, "--rate", 10, "-t", "2s", "--timeout", "500ms", every=2)
    m = r["mqtt"]
    assert p.returncode == 0, p.stderr
    assert kinds(r).get("connect_timeout", 0) >= 1 and set(kinds(r)) <= {"connect_timeout", "unsent"}, r["errors"]
    assert m["failed"] == m["unsent"] and m["published"] == m["sent"] - m["unsent"] > 0
    assert_broker_saw(m, broker_received(broker))
    assert took < 2 + 0.5 + 5  # the duration, one paced grace (the timeout), start-up


def test_mqtt_a_bandwidth_limit_slows_but_does_not_fail(broker, tmp_path):
    n, bps = 50, 100
    p, r, took = mqtt(broker, tmp_path, "bandwidth", bps, "-u", 1, "-n", n, "--timeout", "5s")
    m = r["mqtt"]
    assert p.returncode == 0 and r["errors"] == [], p.stderr
    assert m["published"] == n == broker_received(broker)
    # n PUBACKs of 4 bytes at bps bytes a second. The measured time starts once the client has connected
    # (up to a 10-ms coordinator tick later), and the proxy's allowance counts from the connection's
    # start, so the connect time (timed by squall from before the proxy's) may be won back.
    connect_s = endpoint(r, "CONNECT")["max_us"] / 1e6
    assert m["measured_s"] + connect_s + 0.01 >= 4 * n / bps, (m["measured_s"], connect_s)
    assert took < 4 * n / bps + 5


@pytest.mark.parametrize("fault, arg", [("stall", None), ("reset", 0), ("truncate", 2), ("halfclose", None)])
def test_mqtt_a_broker_that_never_answers_is_exit_3_on_time(broker, fault, arg):
    with proxy(broker.port, fault, arg) as port:
        began = time.monotonic()
        p = squall("mqtt", "--broker", f"mqtt://127.0.0.1:{port}", "-n", 5, "--timeout", "1s", "-q")
        took = time.monotonic() - began
    assert p.returncode == 3 and p.stderr.count("\n") == 1 and "Traceback" not in p.stderr, p.stderr
    assert "cannot connect to the broker" in p.stderr and broker_received(broker) == 0
    assert took < 1 + 5

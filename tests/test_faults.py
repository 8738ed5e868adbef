"""The fault suite: a proxy (tests/servers/fault_proxy.py) between squall and a real server injects one
fault; squall must keep running, count the failures under the right kind, end on time, exit with the
documented code, and count what the server saw (within the requests in flight)."""

import contextlib
import json
import time

import pytest

from support import Mosquitto, serving, squall


@contextlib.contextmanager
def proxy(upstream_port, fault, arg=None, every=1):
    with serving("fault_proxy.py", upstream_port, fault, *([arg] if arg is not None else []), "--every", every) as port:
        yield port


def bench(port, tmp_path, *args):
    out = tmp_path / "r.json"
    began = time.monotonic()
    p = squall("bench", f"http://127.0.0.1:{port}/", *args, "--json", out, "-q", timeout=120)
    took = time.monotonic() - began
    assert "Traceback" not in p.stderr, p.stderr
    return p, json.loads(out.read_text()), took


def kinds(r):
    return {e["kind"]: e["count"] for e in r["errors"]}


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
    with proxy(nginx.port, fault, arg) as port:
        p, r, took = bench(port, tmp_path, "-c", 2, "-n", 20, "--timeout", "2s")
    assert p.returncode == 1, (p.stdout, p.stderr)  # every request failed
    assert set(kinds(r)) <= {"closed", "protocol"} and sum(kinds(r).values()) == r["aggregate"]["failures"] == 20
    assert took < 30


def test_a_stalled_server_times_out_on_time(nginx, tmp_path):
    with proxy(nginx.port, "stall") as port:
        p, r, took = bench(port, tmp_path, "-c", 2, "-t", "2s", "--timeout", "300ms")
    assert p.returncode == 1, (p.stdout, p.stderr)
    assert set(kinds(r)) == {"timeout"} and r["aggregate"]["failures"] >= 2
    assert took < 2 + 0.3 + 5  # the duration, one timeout, and start-up


def test_a_bandwidth_limit_slows_but_does_not_fail(nginx, tmp_path):
    with proxy(nginx.port, "bandwidth", 4000) as port:
        p, r, took = bench(port, tmp_path, "-c", 1, "-n", 30)
    assert p.returncode == 0 and r["aggregate"]["failures"] == 0 and r["aggregate"]["requests"] == 30
    # 30 answers of wire_bytes / 30 bytes each at 4,000 bytes a second.
    assert r["duration_s"] >= 0.8 * r["aggregate"]["wire_bytes"] / 4000, r["duration_s"]


def test_mqtt_broker_that_never_answers_is_exit_3_on_time(tmp_path):
    (tmp_path / "m").mkdir()
    broker = Mosquitto(tmp_path / "m")
    try:
        with proxy(broker.port, "stall") as port:
            began = time.monotonic()
            p = squall("mqtt", "--broker", f"mqtt://127.0.0.1:{port}", "-n", 5, "--timeout", "1s", "-q")
            took = time.monotonic() - began
        assert p.returncode == 3 and p.stderr.count("\n") == 1, p.stderr
        assert took < 1 + 5
    finally:
        broker.stop()


def test_mqtt_connections_reset_after_connack_count_failures(tmp_path):
    (tmp_path / "m").mkdir()
    broker = Mosquitto(tmp_path / "m")
    out = tmp_path / "m.json"
    try:
        with proxy(broker.port, "reset", 4, every=2) as port:  # every other client: CONNACK, then reset
            p = squall(
                "mqtt", "--broker", f"mqtt://127.0.0.1:{port}", "-u", 6, "--rate", 20, "-t", "2s", "--qos", 1,
                "--timeout", "1s", "--json", out, "-q",
            )  # fmt: skip
        r = json.loads(out.read_text())
        assert "Traceback" not in p.stderr and p.returncode in (0, 1), p.stderr
        assert r["mqtt"]["published"] > 0 and (r["mqtt"]["failed"] + r["mqtt"]["unsent"]) > 0
    finally:
        broker.stop()


def test_http2_over_tls_reset_mid_handshake_is_a_start_error(nginx):
    tls_port = int(nginx.tls_url.rsplit(":", 1)[1])
    with proxy(tls_port, "reset", 100) as port:
        p = squall("bench", f"https://127.0.0.1:{port}/", "--http2", "--insecure", "-n", 5, "-q", timeout=60)
    assert p.returncode == 3 and p.stderr.count("\n") == 1 and "Traceback" not in p.stderr, p.stderr

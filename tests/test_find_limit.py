"""`--find-limit` against a server of known capacity (tests/servers/capacity_server.py answers at most
CAPACITY requests a second; beyond, requests queue): the limit found must be that capacity."""

import json
import subprocess
import sys
import time

import pytest

from support import HERE, free_port, squall, squall_get, wait_for_port

CAPACITY = 1500


@pytest.fixture(scope="module")
def capacity_server():
    port = free_port()
    proc = subprocess.Popen([sys.executable, HERE / "servers" / "capacity_server.py", str(port), str(CAPACITY)])
    wait_for_port(port)
    yield f"http://127.0.0.1:{port}"
    proc.kill()
    proc.wait()


def test_the_limit_found_is_the_targets_capacity_and_repeats(capacity_server, tmp_path):
    """Within 10% of the capacity, in under 2 minutes, twice in a row within 10% of each other (the
    issue's bar). Where it lands: at most 5% apart after bisection, and a step passes while the target
    serves 97% of what is offered; the bucket's 50 ms burst adds 2.5% over a 2 s step."""
    limits = []
    for i in range(2):
        out = tmp_path / f"limit{i}.json"
        served_before = int(squall_get(capacity_server + "/__served"))
        began = time.monotonic()
        p = squall("bench", capacity_server + "/", "--find-limit", "--step-time", "2s", "--json", out, timeout=150)
        took = time.monotonic() - began
        assert p.returncode == 0, (p.stdout, p.stderr)
        assert took < 120, took
        r = json.loads(out.read_text())
        found = r["limit"]["load"]
        assert 0.9 * CAPACITY <= found <= 1.1 * CAPACITY, p.stdout
        assert r["limit"]["unit"] == "req/s" and r["limit"]["failed_at"] > found
        assert "Limit:" in p.stdout and "the target did not keep up" in p.stdout + r["limit"]["reason"]
        # The steps' counts are what the server served: every request of every step and the probe's,
        # those still queued at the target when their step ended included (the server serves them
        # later; squall counts them as abandoned). Let the queue drain first.
        steps = [*r["limit"]["steps"], r["limit"]["probe"]]
        sent = sum(s["requests"] + s["abandoned"] for s in steps)
        deadline = time.monotonic() + 30
        while int(squall_get(capacity_server + "/__served")) - served_before < sent and time.monotonic() < deadline:
            time.sleep(0.2)
        assert int(squall_get(capacity_server + "/__served")) - served_before == sent
        limits.append(found)
    assert abs(limits[0] - limits[1]) <= 0.1 * min(limits), limits


def test_find_limit_refuses_what_it_sets_itself(capacity_server):
    for extra in (["--rate", "100"], ["-n", "10"], ["-t", "5s"], ["--slo", "p95<<1"]):
        p = squall("bench", capacity_server + "/", "--find-limit", *extra)
        assert p.returncode == 2 and p.stderr.count("\n") == 1, p.stderr


def test_locustfile_find_limit_counts_users(capacity_server, tmp_path):
    """Users pacing one request every 100 ms: the capacity of 1,500 a second is 150 users."""
    out = tmp_path / "u.json"
    began = time.monotonic()
    p = squall(
        "-f", HERE / "locustfiles" / "paced.py", "-H", capacity_server, "--find-limit", "--step-time", "3s",
        "--result-json", out, timeout=150,
    )  # fmt: skip
    assert p.returncode == 0, (p.stdout[-3000:], p.stderr[-3000:])
    assert time.monotonic() - began < 120
    r = json.loads(out.read_text())
    users = CAPACITY / 10
    assert r["limit"]["unit"] == "users" and 0.9 * users <= r["limit"]["load"] <= 1.1 * users, p.stdout
    assert max(s["users"] for s in r["timeseries"]) == r["limit"]["load"]  # the result is that step's run


def test_mqtt_find_limit_counts_acknowledged_messages(tmp_path):
    """A broker that acknowledges at most 2,000 QoS 1 messages a second (tests/servers/capacity_broker.py)."""
    port, capacity = free_port(), 2000
    broker = subprocess.Popen([sys.executable, HERE / "servers" / "capacity_broker.py", str(port), str(capacity)])
    try:
        wait_for_port(port)
        out = tmp_path / "m.json"
        began = time.monotonic()
        p = squall(
            "mqtt", "--broker", f"mqtt://127.0.0.1:{port}", "-u", 20, "--qos", 1, "--find-limit",
            "--step-time", "2s", "--json", out, timeout=150,
        )  # fmt: skip
        assert p.returncode == 0, (p.stdout, p.stderr)
        assert time.monotonic() - began < 120
        r = json.loads(out.read_text())
        assert r["limit"]["unit"] == "msg/s" and 0.9 * capacity <= r["limit"]["load"] <= 1.1 * capacity, p.stdout
    finally:
        broker.kill()
        broker.wait()

"""`--find-limit` against a server of known capacity (tests/servers/capacity_server.py answers at most
CAPACITY requests a second; beyond, requests queue): the limit found must be that capacity."""

import json
import subprocess
import sys
import time

import pytest

from support import HERE, free_port, squall, squall_get, wait_for_port

pytestmark = [pytest.mark.slow, pytest.mark.serial]

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


@pytest.fixture
def known_capacity():
    """A server of tests/servers/known_capacity.py: start(mode, *args) -> its URL; killed after the test."""
    procs = []

    def start(*args):
        port = free_port()
        procs.append(subprocess.Popen([sys.executable, HERE / "servers" / "known_capacity.py", str(port), *args]))
        wait_for_port(port)
        return f"http://127.0.0.1:{port}"

    yield start
    for proc in procs:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize(
    "mode, args, step, why",
    [
        # 200 slots held 100 ms: 2,000 a second, which needs over 200 requests in flight; -c's default 50
        # carries 500 a second, so a search limited by it would say 500 (the 2,184 for 4,165).
        ("slots", ("200", "100"), "2s", "service time and concurrency"),
        ("cpu", ("1",), "2s", "one core at 1 ms of CPU a request"),
        # about 100 a second: 3 s steps, for 300 requests a step where the others have 2,000 and more
        ("pool", ("2", "20"), "3s", "2 sync workers at 20 ms, a connection each"),
    ],
)
def test_the_limit_is_what_the_server_measured_it_can_do(known_capacity, tmp_path, mode, args, step, why):
    """Each server measures its own capacity as it serves (see its doc): the limit found is within 10% of
    it in both directions. The search's own precision is 5% (bisection) plus what a step at most 3% over
    capacity can pass for (KEEP_UP), all inside 10%; no step may be called squall's limit. A step is as
    short as its count allows: 2 s where the server does 1,000 a second or more (a count's noise is then
    2% at most), 3 s at 100 a second."""
    url = known_capacity(mode, *args)
    out = tmp_path / "limit.json"
    p = squall("bench", url + "/", "--find-limit", "--step-time", step, "--json", out, timeout=240)
    assert p.returncode == 0, (p.stdout, p.stderr)
    truth = float(squall_get(url + "/__capacity"))
    r = json.loads(out.read_text())
    found = r["limit"]["load"]
    assert 0.9 * truth <= found <= 1.1 * truth, (why, truth, p.stdout)
    steps = r["limit"]["steps"]
    assert not any(s["generator_bound"] for s in steps), p.stdout
    for s in steps:  # every step says why, and the passing ones had the connections Little's law asks
        assert s["checks"] and all(c["detail"] for c in s["checks"])
        if s["passed"] and not s["retry"]:
            assert s["connections"] >= s["achieved"] * s["service_us"] / 1e6
    assert "Limit:" in p.stdout and " conns " in p.stdout.splitlines()[1]


def test_users_pacing_against_a_sync_worker_pool(known_capacity, tmp_path):
    """Users each sending one request every 100 ms against 4 sync workers of 20 ms (about 195 a second:
    the server's own measure is the truth): the most users is capacity / 10 a second, within 10%. The
    users are a closed system; with a fixed per-user rate, the step beyond capacity is the one whose
    throughput stops following the users (the issue's 6-user step failed on noise it called a trend)."""
    url = known_capacity("pool", "4", "20")
    out = tmp_path / "u.json"
    p = squall(
        "-f", HERE / "locustfiles" / "paced.py", "-H", url, "--find-limit", "--step-time", "4s",
        "--result-json", out, timeout=300,
    )  # fmt: skip
    assert p.returncode == 0, (p.stdout[-3000:], p.stderr[-3000:])
    users = float(squall_get(url + "/__capacity")) / 10
    r = json.loads(out.read_text())
    assert r["limit"]["unit"] == "users" and 0.9 * users <= r["limit"]["load"] <= 1.1 * users, (users, p.stdout)
    assert r["limit"]["probe"]["load"] == 1 and abs(r["limit"]["probe"]["achieved"] - 10) < 0.5


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

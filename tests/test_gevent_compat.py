"""`import gevent` in locustfiles run by `squall -f` (squall.gevent_compat): fan-outs that overlap in the
engine, a semaphore that holds users until spawning completes, background greenlets that end with the
run, events, queues and timeouts; measured against real servers (a server of fixed delay, nginx's access
log) and against real Locust running the same files."""

import csv
import importlib.util
import json
import os
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from support import serving, squall

FILES = Path(__file__).parent / "locustfiles"
DELAY = 0.2  # the delay server's answer time: long beside loopback and scheduling costs (well under 10 ms)
HAS_LOCUST = importlib.util.find_spec("locust") is not None  # (not imported here: gevent would patch pytest)
LINE = re.compile(r'"[A-Z]+ (\S+) HTTP/[\d.]+" \d+ \d+ ([\d.]+) \d+$')


@pytest.fixture(scope="module")
def delay_server():
    """tests/servers/delay_server.py: every answer exactly DELAY after its request (a thread per
    connection, so requests on different connections are answered in parallel)."""
    with serving("delay_server.py", DELAY * 1000) as port:
        yield f"http://127.0.0.1:{port}"


def run(tool, name, host, tmp_path, users, run_time="30s", expect=0, extra_env=None):
    """Runs locustfile `name` under squall or Locust; returns (process, what the file recorded)."""
    out = tmp_path / f"{tool}-{name}.json"
    env = dict(os.environ, SQUALL_TEST_OUT=str(out), **(extra_env or {}))
    args = ["-f", FILES / name, "-H", host, "--headless", "-u", users, "-r", users, "-t", run_time, "--only-summary"]
    if tool == "squall":
        args += ["--csv", tmp_path / f"{tool}-{name}"]
        p = squall(*args, env=env, timeout=90)
    else:
        cmd = [sys.executable, "-m", "locust", *args, "--loglevel", "ERROR"]
        p = subprocess.run(list(map(str, cmd)), capture_output=True, text=True, timeout=90, env=env)
    assert p.returncode == expect, (tool, p.returncode, p.stdout[-2000:], p.stderr[-3000:])
    return p, json.loads(out.read_text())


def nginx_requests(nginx):
    """(request target, arrival time) of each request nginx logged since the last reset."""
    time.sleep(0.2)  # nginx writes each line as its request ends
    lines = (nginx.dir / "access.log").read_text().splitlines()
    return [(m.group(1), float(m.group(2))) for m in map(LINE.search, lines) if m]


TOOLS = ["squall", pytest.param("locust", marks=pytest.mark.skipif(not HAS_LOCUST, reason="Locust not installed"))]


@pytest.mark.parametrize("tool", TOOLS)
def test_a_fan_out_of_four_takes_its_slowest_request_not_their_sum(delay_server, tmp_path, tool):
    """Four requests at once (a Pool, a Group with joinall, gevent.spawn with joinall, Pool.map): every
    one takes at least DELAY at the server, so a fan-out takes at least DELAY; had any two of its four
    run one after the other, it would take at least 2 x DELAY (4 x DELAY in series). Under 2 x DELAY
    means all four overlapped; what remains above DELAY is connection setup and scheduling (ms). Locust
    on the same file and server is the reference."""
    _, record = run(tool, "gevent_fan_out.py", delay_server, tmp_path, users=2, extra_env={"FAN_OUT_ROUNDS": "2"})
    for way, took in record["times"].items():
        assert len(took) == 2 * 2, (way, took)  # 2 users x 2 rounds
        assert all(DELAY <= t < 2 * DELAY for t in took), (tool, way, took)
    if tool == "squall":
        rows = {r["Name"]: r for r in csv.DictReader(open(tmp_path / "squall-gevent_fan_out.py_stats.csv"))}
        for way in record["times"]:
            assert rows[f"fan {way}"]["Request Count"] == "16"  # 2 users x 2 rounds x 4
            assert float(rows[f"fan {way}"]["Min Response Time"]) >= DELAY * 1000


@pytest.mark.skipif(not HAS_LOCUST, reason="Locust not installed")
@pytest.mark.parametrize("name, users", [("gevent_fan_out.py", 3), ("gevent_gate.py", 4), ("gevent_sync.py", 2)])
def test_the_server_receives_the_same_requests_as_from_locust(nginx, delay_server, tmp_path, name, users):
    """The same file under Locust and squall: each request target arrives at nginx as often from both
    (each file makes a set number of requests per user, then the user stops and the run ends), and what
    the file recorded of gevent's behaviour is the same."""
    counts, records = {}, {}
    for tool in ("locust", "squall"):
        nginx.reset_log()
        _, records[tool] = run(tool, name, nginx.url, tmp_path, users, extra_env={"SLOW_URL": delay_server})
        counts[tool] = Counter(target for target, _ in nginx_requests(nginx))
    assert counts["squall"] == counts["locust"] and sum(counts["squall"].values()) > 0, counts
    if name == "gevent_sync.py":
        assert records["squall"]["outcomes"] == records["locust"]["outcomes"]
        assert records["squall"]["outcomes"]["user0"]["slow_cut_short"] is True


def test_users_wait_at_a_semaphore_until_spawning_completes(nginx, tmp_path):
    """4 users at 4 a second: the last starts 0.75 s after the first. Held by the semaphore in on_start,
    none reaches nginx before the spawning_complete listener released it (nginx's own arrival times,
    logged to the millisecond: hence the 2 ms allowance); without the hold the first would arrive about
    0.75 s earlier. Then all 4 pass, two at a time."""
    nginx.reset_log()
    _, record = run("squall", "gevent_gate.py", nginx.url, tmp_path, users=4)
    arrivals = nginx_requests(nginx)
    firsts = [t for target, t in arrivals if target == "/gate?first"]
    assert len(firsts) == 4 and len(arrivals) == 8
    assert min(firsts) >= record["spawned_at"] - 0.002, (min(firsts), record["spawned_at"])


def test_background_greenlets_end_with_the_users(nginx, tmp_path):
    """A greenlet spawned in on_start loops forever; the run still ends at -t (promptly, exit 0), the
    greenlets are killed with the users (their `finally` ran before test_stop), and none made a request
    after test_stop."""
    nginx.reset_log()
    start = time.monotonic()
    _, record = run("squall", "gevent_background.py", nginx.url, tmp_path, users=2, run_time="2s")
    assert time.monotonic() - start < 2 + 8  # startup, the 2 s and the end: seconds, not the 10 s grace
    assert record["ended"] == 2
    background = [t for target, t in nginx_requests(nginx) if target == "/background"]
    # One request every 0.1 s per user for about 2 s (the users start within 0.5 s): ~30-40 in all.
    assert len(background) >= 15, len(background)
    assert max(background) <= record["test_stop_at"] + 0.002


def test_a_failing_greenlet_is_reported_like_a_task_exception(nginx, tmp_path):
    """gevent prints the greenlet's failure; squall also counts it in the exceptions (so the exit code is
    Locust's for task exceptions, 1). A greenlet killed before it ran never runs: nginx sees no /never."""
    nginx.reset_log()
    p, record = run("squall", "gevent_errors.py", nginx.url, tmp_path, users=2, expect=1)
    assert record["failed"] == {"exception": "ZeroDivisionError('division by zero')", "successful": False}
    assert p.stderr.count("failed with ZeroDivisionError") == 2
    rows = list(csv.DictReader(open(tmp_path / "squall-gevent_errors.py_exceptions.csv")))
    assert [(r["Count"], r["Message"]) for r in rows] == [("2", "division by zero")]
    assert "gevent_errors.py" in rows[0]["Traceback"]
    assert Counter(target for target, _ in nginx_requests(nginx)) == {"/after": 2}


def test_import_gevent_works_without_gevent_installed(nginx, tmp_path):
    """A finder that refuses the real `gevent` package stands in for an environment without it."""
    blocker = tmp_path / "sitecustomize.py"
    blocker.write_text(
        "import sys\n"
        "class NoGevent:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if (name == 'gevent' or name.startswith('gevent.')) and name not in sys.modules:\n"
        "            raise ModuleNotFoundError(name)\n"
        "sys.meta_path.insert(0, NoGevent())\n"
    )
    env = {"PYTHONPATH": f"{tmp_path}:{os.environ.get('PYTHONPATH', '')}"}
    check = subprocess.run([sys.executable, "-c", "import gevent"], env=dict(os.environ, **env), capture_output=True)
    assert check.returncode != 0  # the real package is out of reach
    nginx.reset_log()
    _, record = run("squall", "gevent_fan_out.py", nginx.url, tmp_path, users=1, extra_env=env)
    assert sum(len(t) for t in record["times"].values()) == 2 * 4  # 2 rounds of the 4 ways
    assert len(nginx_requests(nginx)) == 2 * 4 * 4


@pytest.mark.skipif(importlib.util.find_spec("gevent") is None, reason="gevent not installed")
def test_outside_a_run_gevent_stays_real():
    """Importing squall (its command line, its Locust aliases) does not alias anything by itself."""
    code = "import squall.commands.run, squall.locust_compat, gevent, gevent.pool; print(gevent.pool.__file__)"
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    # gevent's own package, wherever the clone is (its folder may well be named squall): not gevent_compat
    real = Path(importlib.util.find_spec("gevent").origin).parent
    assert Path(p.stdout.strip()) == real / "pool.py", p.stdout

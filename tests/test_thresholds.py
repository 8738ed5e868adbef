"""Thresholds end to end: verdicts against what the server saw or did, exit code 99, the abort."""

import json
import os
import time

import pytest

from support import HERE, Mosquitto, squall

FILES = HERE / "locustfiles"


@pytest.fixture(scope="module")
def slow_target():
    """squall's built-in target: /slow?ms=N answers after sleeping N ms (a latency floor we know)."""
    from squall import _engine

    t = _engine.DemoTarget(0)
    yield f"http://127.0.0.1:{t.port}"
    t.stop()


def test_failures_break_an_error_rate_threshold_with_exit_99(nginx, tmp_path):
    nginx.reset_log()
    out = tmp_path / "r.json"
    p = squall(
        "bench", nginx.url + "/status/500", "-n", 200, "-c", 4, "--json", out, "--csv", tmp_path / "run",
        "--threshold", "error_rate<1%", "--threshold", "p95<10s", "-q",
    )  # fmt: skip
    assert p.returncode == 99, p.stderr
    rows = (tmp_path / "run_thresholds.csv").read_text().splitlines()
    assert rows[0].startswith("Threshold,") and rows[1].startswith("error_rate<1%,,1.0,100.000%,False")
    r = json.loads(out.read_text())
    by = {t["threshold"]: t for t in r["thresholds"]}
    assert by["error_rate<1%"]["passed"] is False and by["error_rate<1%"]["value"] == 1.0
    assert by["p95<10s"]["passed"] is True
    assert nginx.requests_logged() == r["aggregate"]["requests"] == 200
    assert "FAIL  error_rate<1%" in p.stdout and "1 passed, 1 failed" in p.stdout


def test_latency_thresholds_against_a_server_of_known_latency(slow_target, tmp_path):
    out = tmp_path / "r.json"
    p = squall(
        "bench", slow_target + "/slow?ms=50", "-n", 40, "-c", 4, "--json", out,
        "--threshold", "p50<20ms", "--threshold", "min>=50ms", "--threshold", "p99.5<5s", "-q",
    )  # fmt: skip
    assert p.returncode == 99, p.stderr
    by = {t["threshold"]: t for t in json.loads(out.read_text())["thresholds"]}
    # The server sleeps 50 ms before it answers: no response can be faster.
    assert not by["p50<20ms"]["passed"] and by["p50<20ms"]["value"] >= 50_000
    assert by["min>=50ms"]["passed"]
    assert by["p99.5<5s"]["passed"]  # a percentile off the reported list: read from the histogram


def test_threshold_abort_stops_the_run_after_the_grace(slow_target, tmp_path):
    out = tmp_path / "r.json"
    began = time.monotonic()
    p = squall(
        "bench", slow_target + "/slow?ms=50", "-c", 2, "-t", "60s", "--json", out,
        "--threshold", "p95<10ms", "--threshold-abort", "--threshold-grace", "1s", "-q",
    )  # fmt: skip
    took = time.monotonic() - began
    assert p.returncode == 99, p.stderr
    r = json.loads(out.read_text())
    assert r["stop_reason"] == "threshold" and "stopping: threshold p95<10ms failed" in p.stderr
    assert ", stopped: threshold\n" in p.stdout, p.stdout  # the summary says it as the JSON does (not "interrupted")
    # Checked once a second from the end of the 1 s grace, on seconds published up to 2 s late (the
    # stream's straggler limit): it stops within a few seconds of a 60 s run, counted from launch.
    assert took < 15 and r["duration_s"] < 10


@pytest.mark.slow
def test_locustfile_thresholds_from_the_config_file_and_the_command_line(nginx, tmp_path):
    (tmp_path / "locust.conf").write_text("threshold = p95<10s; error_rate<1%\n")
    out = tmp_path / "r.json"
    args = ["-f", FILES / "dashboard.py", "-H", nginx.url, "--headless", "-u", 2, "-t", "2s", "--result-json", out]
    p = squall(*args, "--only-summary", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert [t["threshold"] for t in json.loads(out.read_text())["thresholds"]] == ["p95<10s", "error_rate<1%"]
    p = squall(*args, "--only-summary", "--threshold", "rps>=1000000", cwd=tmp_path)
    assert p.returncode == 99, p.stderr
    verdicts = json.loads(out.read_text())["thresholds"]
    assert [t["passed"] for t in verdicts] == [True, True, False]


def test_mqtt_delivery_thresholds(tmp_path):
    (tmp_path / "mosq").mkdir()
    broker = Mosquitto(tmp_path / "mosq")
    try:
        out = tmp_path / "m.json"
        p = squall(
            "mqtt", "--broker", broker.url, "-u", 4, "--rate", 10, "-t", "2s", "--qos", 1, "--verify", "--json", out,
            "--threshold", "lost==0", "--threshold", "deliver.p99<5s", "--threshold", "delivered>=80", "-q",
        )  # fmt: skip
        assert p.returncode == 0, (p.stdout, p.stderr)
        r = json.loads(out.read_text())
        assert all(t["passed"] for t in r["thresholds"]) and r["mqtt"]["delivery"]["delivered"] == 80
    finally:
        broker.stop()


def test_a_bad_threshold_is_refused_before_the_run(nginx):
    nginx.reset_log()
    for cmd in (
        ["bench", nginx.url + "/", "-n", 10, "--threshold", "p95<<3"],
        ["bench", nginx.url + "/", "-n", 10, "--threshold-abort"],
        # MQTT's measures under bench: it ran the whole load, then failed 99 ("no endpoint PUBLISH")
        ["bench", nginx.url + "/", "-n", 10, "--threshold", "lost==0"],
        ["bench", nginx.url + "/", "-n", 10, "--threshold", "publish.p95<1s"],
        ["-f", FILES / "dashboard.py", "-H", nginx.url, "--headless", "-t", "1s", "--threshold", "latency<1"],
    ):
        p = squall(*cmd)
        assert p.returncode == 2 and p.stderr.count("\n") == 1 and "Traceback" not in p.stderr, p.stderr
    assert nginx.requests_logged() == 0


def test_thresholds_are_reachable_from_a_locustfile(nginx, tmp_path):
    seen = tmp_path / "seen.json"
    p = squall(
        "-f", FILES / "thresholds_api.py", "-H", nginx.url, "--headless", "-u", 2, "-t", "2s", "--only-summary",
        env=dict(os.environ, SQUALL_TEST_OUT=str(seen)),
    )  # fmt: skip
    assert p.returncode == 3, p.stderr  # the file's own verdict, as Locust's process_exit_code pattern
    got = json.loads(seen.read_text())
    assert got["live"] == [["p95<10s", True], ["requests>=1", True]]
    assert got["final"] == [["p99.5<10s", True], ["rps>1000000", False]]


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")
def test_the_verdicts_give_the_exit_code_an_unwritten_output_makes(nginx, tmp_path):
    """A threshold fails and --json cannot be written (/dev/full: no space left): the command exits 5
    (an output missing comes before the thresholds' 99, numbers.md), and the verdict block, said after
    the files, says 5 with its reason, not 99."""
    p = squall("bench", nginx.url + "/", "-n", 20, "-c", 2, "--json", "/dev/full", "--threshold", "p50<1us")
    assert p.returncode == 5, (p.stdout[-1500:], p.stderr)
    assert "exit code 5: an output could not be written" in p.stdout and "(exit code 99)" not in p.stdout

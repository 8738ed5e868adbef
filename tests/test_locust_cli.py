"""`squall -f` against Locust 2.47 itself: the same locustfile, the same command line, the same real
server; squall's Locust JSON, log lines and flags are compared with what Locust produced."""

import json
import os
import re
import signal
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest

from support import squall, squall_process, wait_until

FILES = Path(__file__).parent / "locustfiles"
# A log line in Locust's format: [time] host/LEVEL/logger: message
LOG_LINE = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\] ([\w-]+)/([A-Z]+)/([\w.]+): (.*)$")


def clean_env(**extra):
    """The environment without LOCUST_* settings from outside (they would change both runs)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOCUST_")}
    env.update({k: str(v) for k, v in extra.items()})
    return env


def locust(*args, cwd, env, timeout=60):
    """Runs Locust 2.47 from the dev venv (the same interpreter the tests run in)."""
    return subprocess.run(
        [sys.executable, "-m", "locust", *map(str, args)],
        capture_output=True, text=True, cwd=cwd, env=env, timeout=timeout,
    )  # fmt: skip


def log_records(stderr):
    """(level, logger, message) of each line in Locust's log format, in order."""
    return [(m[3], m[4], m[5]) for m in map(LOG_LINE.match, stderr.splitlines()) if m]


def both(tmp_path, odd_server, *args, iterations=0):
    """The same command line run by Locust and by squall (each in a directory of its own)."""
    out = {}
    for tool, runner in (("locust", locust), ("squall", None)):
        cwd = tmp_path / tool
        cwd.mkdir()
        env = clean_env(CLI_ITERATIONS=iterations)
        argv = ["-f", FILES / "cli_bounded.py", "-H", odd_server.url, "--headless", *args]
        out[tool] = (runner(*argv, cwd=cwd, env=env) if runner else squall(*argv, cwd=cwd, env=env, timeout=60), cwd)
    return out


@pytest.mark.slow
def test_json_is_locusts(odd_server, tmp_path):
    """3 users x 4 iterations of (GET /ok, GET /status/500): both tools' `--json-file` rows have Locust's
    fields in Locust's order with Locust's types, and exactly the counts the server saw."""
    runs = both(tmp_path, odd_server, "-u", 3, "-r", 100, "-t", "3s", "--json-file", "stats", iterations=4)
    rows = {}
    for tool, (p, cwd) in runs.items():
        assert p.returncode == 1, (tool, p.stderr[-2000:])  # the 500s are failures
        assert (cwd / "stats.json").exists() and not (cwd / "stats").exists()  # Locust's NAME.json
        rows[tool] = {r["name"]: r for r in json.loads((cwd / "stats.json").read_text())}
    assert odd_server.served("/ok") == 24 and odd_server.served("/status/500") == 24  # both runs
    assert set(rows["squall"]) == set(rows["locust"]) == {"/ok", "/status/500"}  # no "Aggregated" row
    for name, ours in rows["squall"].items():
        theirs = rows["locust"][name]
        assert list(ours) == list(theirs)
        for key, value in theirs.items():
            assert type(ours[key]) is type(value), (name, key, ours[key], value)
        for key in ("method", "num_requests", "num_none_requests", "num_failures", "total_content_length"):
            assert ours[key] == theirs[key], (name, key)
        assert ours["num_requests"] == 12 and ours["num_failures"] == (12 if name == "/status/500" else 0)
        for r in (ours, theirs):
            assert sum(r["response_times"].values()) == r["num_requests"]
            assert sum(r["num_reqs_per_sec"].values()) == r["num_requests"]
            assert sum(r["num_fail_per_sec"].values()) == r["num_failures"]
            assert all(k.isdigit() for k in [*r["response_times"], *r["num_reqs_per_sec"]])
            assert r["min_response_time"] <= r["total_response_time"] / r["num_requests"] <= r["max_response_time"]
            assert r["start_time"] <= r["last_request_timestamp"] <= time.time()
        # Every bucket is a value Locust's rounding can produce, and the buckets hold the extremes.
        keys = sorted(int(k) for k in ours["response_times"])
        assert keys[0] <= round(ours["min_response_time"]) and keys[-1] >= round(ours["max_response_time"]) - 1


def test_json_on_stdout_and_the_tables(odd_server, tmp_path):
    """`--json`: stdout is the JSON list alone (the tables go to stderr, as Locust's logger sends them);
    `--json` with `--json-file` prints and writes the same rows; squall's own result is --result-json's."""
    cwd = tmp_path
    p = squall(
        "-f", FILES / "cli_bounded.py", "-H", odd_server.url, "--headless", "-u", 2, "-t", "3s",
        "--json", "--json-file", "stats", "--result-json", "full.json", cwd=cwd, env=clean_env(CLI_ITERATIONS=3),
    )  # fmt: skip
    assert p.returncode == 1, p.stderr
    printed = json.loads(p.stdout)
    assert printed == json.loads((cwd / "stats.json").read_text())
    assert sum(r["num_requests"] for r in printed) == 12
    full = json.loads((cwd / "full.json").read_text())
    assert full["aggregate"]["requests"] == 12 and "histogram" in full["endpoints"][0]
    p = squall("report", cwd / "stats.json", "--html", cwd / "r.html", cwd=cwd)
    assert p.returncode == 2 and "--result-json" in p.stderr and len(p.stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_json_stdout_stays_json_through_the_periodic_tables(odd_server, tmp_path):
    """CI pipes `--json` into a JSON reader: in a run long enough for the 2-s tables, stdout is the JSON
    alone (Locust's stdout is too: its tables go to stderr through its stats logger). The thresholds
    pass, but requests failed, so the exit code is --exit-code-on-error's 1: the verdict block says so,
    with the count of failed requests, which is what the server answered 500 to."""
    served_before = odd_server.served("/status/500")
    p = squall(
        "-f", FILES / "cli_bounded.py", "-H", odd_server.url, "--headless", "-u", 2, "-t", "3s", "--json",
        "--threshold", "p95<10s", cwd=tmp_path, env=clean_env(CLI_ITERATIONS=0),
    )  # fmt: skip
    assert p.returncode == 1, p.stderr
    printed = json.loads(p.stdout)  # nothing but the JSON
    assert p.stderr.count("Response time percentiles") == 1 and p.stderr.count("Aggregated") >= 3  # 2-s tables too
    failed = next(r["num_failures"] for r in printed if r["name"] == "/status/500")
    # Every failure is a 500 the server sent; a request in flight when the run ended is in neither count
    # of squall (abandoned) but may be in the server's, so the server saw at most the 2 users' more.
    assert failed <= odd_server.served("/status/500") - served_before <= failed + 2
    assert "1 passed, 0 failed" in p.stderr
    assert f"exit code 1: {failed:,} requests failed (--exit-code-on-error 1)" in p.stderr, p.stderr[-1500:]


@pytest.mark.slow
def test_log_lines_are_locusts(odd_server, tmp_path):
    """A 2 s run: the same messages under the same loggers and levels, in the same order, in Locust's
    format; the locustfile's own `logging` call lands among them."""
    runs = both(tmp_path, odd_server, "-u", 2, "-r", 100, "-t", "2s", "--only-summary")
    records = {}
    for tool, (p, _cwd) in runs.items():
        assert p.returncode == 1, (tool, p.stderr[-2000:])
        records[tool] = log_records(p.stderr)
        stamps = [LOG_LINE.match(line) for line in p.stderr.splitlines()]
        for m in filter(None, stamps):
            datetime.strptime(m[1], "%Y-%m-%d %H:%M:%S,%f")
    assert records["locust"][0] == ("INFO", "locust.main", "Starting Locust 2.47.0")
    assert records["squall"][0][:2] == ("INFO", "locust.main") and "Starting squall" in records["squall"][0][2]
    assert records["squall"][1:] == records["locust"][1:], records
    assert ("WARNING", "cli_test", "from the locustfile") in records["squall"]
    assert records["squall"][-1] == ("INFO", "locust.main", "Shutting down (exit code 1)")


def test_loglevel_logfile_and_skip_log_setup(odd_server, tmp_path):
    common = ["-f", FILES / "cli_bounded.py", "-H", odd_server.url, "--headless", "-t", "1s", "--only-summary"]
    env = clean_env(CLI_ITERATIONS=1)
    p = squall(*common, "--loglevel", "warning", cwd=tmp_path, env=env)
    assert [r[:2] for r in log_records(p.stderr)] == [("WARNING", "cli_test")]  # no INFO line
    p = squall(*common, "--logfile", tmp_path / "logs" / "run.log", cwd=tmp_path, env=env)
    assert log_records(p.stderr) == []  # Locust's file handler replaces stderr's
    in_file = log_records((tmp_path / "logs" / "run.log").read_text())
    assert in_file[0][1] == "locust.main" and ("WARNING", "cli_test", "from the locustfile") in in_file
    p = squall(*common, "--skip-log-setup", cwd=tmp_path, env=env)
    assert log_records(p.stderr) == [] and "from the locustfile" in p.stderr  # Python's last-resort handler


@pytest.mark.parametrize("how", ["run-time", "sigterm"])
def test_a_spinning_task_does_not_hold_the_end(odd_server, tmp_path, how):
    """A task spins 30 s in Python after one request. `-t 2s` ends 2 s after the start and SIGTERM ends
    the run at once, outputs written. Bounds: the watchdog looks every 0.1 s and ends a task past the
    end that has held the interpreter 0.2 s; 0.5 s more covers two engineers' test runs on 2 cores."""
    args = ["-f", FILES / "cli_spin.py", "-H", odd_server.url, "--headless", "--only-summary", "-u", 1]
    outputs = ["--json-file", tmp_path / "stats", "--result-json", tmp_path / "full.json", "--csv", tmp_path / "c"]
    proc = squall_process(*args, "-t", "2s" if how == "run-time" else "60s", *outputs, env=clean_env())
    wait_until(lambda: odd_server.served("/ok") == 1, "the request before the spin", proc)
    if how == "sigterm":
        time.sleep(0.5)  # well inside the spin
        sent = time.monotonic()
        proc.send_signal(signal.SIGTERM)
    _out, err = proc.communicate(timeout=60)
    ended = time.monotonic()
    if how == "sigterm":
        assert proc.returncode == 0, err  # Locust's code: a signal does not change it
        assert ended - sent < 1.0, ended - sent
        assert ("INFO", "locust.main", "Got SIGTERM signal") in log_records(err)
    else:
        assert proc.returncode == 0, err
        start = next(m for m in map(LOG_LINE.match, err.splitlines()) if m and m[5].startswith("Ramping"))
        began = datetime.strptime(start[1], "%Y-%m-%d %H:%M:%S,%f").timestamp()
        assert time.time() - began < 2.0 + 1.0, err  # 2 s, the watchdog, and the outputs
        assert ("INFO", "locust.main", "--run-time limit reached, shutting down") in log_records(err)
    assert json.loads((tmp_path / "stats.json").read_text())[0]["num_requests"] == 1
    assert json.loads((tmp_path / "full.json").read_text())["aggregate"]["requests"] == 1
    assert (tmp_path / "c_stats.csv").exists()


@pytest.mark.parametrize(
    "file, args, message",
    [
        ("nohost.py", [], "User class NoHost has no host"),
        ("nohost.py", ["-H", "ftp://127.0.0.1:21"], "must start with http:// or https://"),
        ("nohost.py", ["-H", "{url}", "-u", "0"], "-u/--users must be at least 1"),
    ],
)
def test_runs_that_cannot_work_are_refused_before_sending(odd_server, tmp_path, file, args, message):
    (tmp_path / "nohost.py").write_text(
        "from locust import HttpUser, constant, task\nclass NoHost(HttpUser):\n    wait_time = constant(1)\n"
        "    @task\n    def t(self):\n        self.client.get('/ok')\n"
    )
    args = [a.replace("{url}", odd_server.url) for a in args]
    p = squall("-f", tmp_path / file, "--headless", "-t", "2s", *args, cwd=tmp_path, env=clean_env())
    assert p.returncode == 2 and message in p.stderr, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1
    assert odd_server.served("/ok") == 0


@pytest.mark.slow
def test_locustfile_forms(tmp_path):
    """-f takes a directory (every .py under it but _-prefixed ones), comma-separated files, and a
    module; Locust lists the same classes for the forms it takes."""
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    user = "from locust import HttpUser, task\nclass {0}(HttpUser):\n    @task\n    def t(self):\n        pass\n"
    (pkg / "a.py").write_text(user.format("A"))
    (pkg / "sub" / "b.py").write_text(user.format("B"))
    (pkg / "_private.py").write_text("raise RuntimeError('not a locustfile')\n")
    env = clean_env()
    for spec in ["pkg", "pkg/a.py,pkg/sub/b.py"]:
        ours = squall("-f", spec, "--list", cwd=tmp_path, env=env)
        theirs = locust("-f", spec, "--list", cwd=tmp_path, env=env)
        assert ours.returncode == theirs.returncode == 0, (ours.stderr, theirs.stderr)
        assert (
            sorted(ours.stdout.split()) == sorted(theirs.stdout.split()[2:]) == ["A", "B"]
        )  # after "Available Users:"
    for spec, names in [("pkg.a", ["A"]), ("pkg/sub/b", ["B"])]:
        p = squall("-f", spec, "--list", cwd=tmp_path, env=env)
        assert p.returncode == 0 and p.stdout.split() == names, p.stderr


def test_every_locust_option_is_accepted():
    """Every option string of Locust's own parser (hidden ones included) is squall's, taking a value
    exactly when Locust's does, settable from the same environment variable; so a new Locust option
    fails here. Locust's parser is read in a process of its own: importing Locust patches the
    interpreter with gevent, which the other tests must not run under."""
    dump = (
        "import json\nfrom locust.argument_parser import get_parser\n"
        "print(json.dumps([[a.option_strings, a.nargs, getattr(a, 'env_var', None)] "
        "for a in get_parser()._actions if a.option_strings]))\n"
    )
    theirs = json.loads(subprocess.run([sys.executable, "-c", dump], capture_output=True, text=True).stdout)
    from squall.cli import build_parser

    _parser, run_parser = build_parser()
    ours = run_parser._option_string_actions
    missing = [o for options, _n, _e in theirs for o in options if o not in ours]
    assert not missing, missing
    for options, nargs, env_var in theirs:
        action = ours[options[0]]
        assert (nargs == 0) == (action.nargs == 0), options
        if env_var:
            assert env_var in (getattr(action, "env_var", None), "LOCUST_" + action.dest.upper()), options


def test_options_with_no_effect_say_so_and_conflicting_roles_are_refused(odd_server, tmp_path):
    common = ["-f", FILES / "cli_bounded.py", "-H", odd_server.url, "--headless", "-t", "1s", "--only-summary"]
    env = clean_env(CLI_ITERATIONS=1)
    p = squall(*common, "--class-picker", "--profile", "nightly", cwd=tmp_path, env=env)
    assert p.returncode == 1, p.stderr  # it ran (the 500 is a failure)
    notes = [line for line in p.stderr.splitlines() if line.startswith("squall: note: ")]
    assert [n.split()[2] for n in notes] == ["--class-picker", "--profile"], notes  # --otel exports (test_otel)
    # A command line refused says only why: no note beside its one line.
    p = squall(*common, "--class-picker", "-r", "1e309", cwd=tmp_path, env=env)
    assert p.returncode == 2 and p.stderr.splitlines() == ["squall run: error: invalid spawn rate '1e309'"], p.stderr
    p = squall(*common, "--expect-workers", "2", "--master-port", "6000", cwd=tmp_path, env=env)
    notes = [line for line in p.stderr.splitlines() if line.startswith("squall: note: ")]
    assert notes == [
        "squall: note: --expect-workers has no effect without --master",
        "squall: note: --master-port has no effect without --worker",
    ], p.stderr
    for flags in (["--master", "--worker"], ["--master", "--ray", "local"], ["--worker", "--ray", "auto"]):
        p = squall(*common, *flags, cwd=tmp_path, env=env)
        assert p.returncode == 2 and len(p.stderr.splitlines()) == 1 and "--master" in p.stderr, p.stderr
    p = squall(*common, "--legacy-ui", cwd=tmp_path, env=env)
    assert p.returncode == 2 and "--legacy-ui is no longer supported" in p.stderr
    assert odd_server.served("/ok") == 2  # only the two runs that ran sent anything


@pytest.mark.slow
def test_show_task_ratio_is_locusts(tmp_path):
    for args in (["--show-task-ratio"], ["--show-task-ratio-json"], ["--show-task-ratio", "-u", "7"]):
        for name in ("classes.py", "flow.py"):
            ours = squall("-f", FILES / name, *args, cwd=tmp_path, env=clean_env())
            theirs = locust("-f", FILES / name, *args, cwd=tmp_path, env=clean_env())
            assert ours.returncode == theirs.returncode == 0, ours.stderr
            assert ours.stdout == theirs.stdout, (name, args)


def test_options_of_a_locustfile_take_env_vars_and_secrets_stay_hidden(odd_server, tmp_path):
    seen = tmp_path / "seen.json"
    p = squall(
        "-f", FILES / "cli_options.py", "-H", odd_server.url, "--headless", "-u", 2, "-t", "1s", "--only-summary",
        "--api-token", "s3cret-value", "--html", tmp_path / "r.html", cwd=tmp_path,
        env=clean_env(CLI_TENANT="acme", SQUALL_TEST_OUT=seen),
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    assert json.loads(seen.read_text()) == {"api_token": "s3cret-value", "tenant": "acme", "num_users": 2}
    assert "s3cret-value" not in (tmp_path / "r.html").read_text()


def test_a_test_stop_listener_reads_every_request_at_once(odd_server, tmp_path):
    """A test_stop listener that reads the stats (as report plugins and --reset-stats's own do) gets
    every request the users made, the second in progress included, without waiting for that second to
    end: before, the read waited for the engine to publish it, 0.9 s of a 2 s run's stop (the run ends
    just after a whole second of the engine's clock, so the rest of that second was nearly all of one).
    What it read is what the server served, less at most one request a user cut short by the stop (2
    users)."""
    before = odd_server.served("/ok")
    out = tmp_path / "read.json"
    p = squall(
        "-f", FILES / "stop_reader.py", "-H", odd_server.url, "--headless", "-u", 2, "-r", 2, "-t", "2s",
        "--only-summary", cwd=tmp_path, env=clean_env(STOP_READ_FILE=str(out)),
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    read = json.loads(out.read_text())
    served = odd_server.served("/ok") - before
    assert read["requests"] > 100  # 2 users, 10 ms apart: about 200 a second
    assert read["requests"] <= served <= read["requests"] + 2, (read, served)
    assert read["took"] < 0.3, read


def test_a_run_ends_promptly_once_its_time_is_up(odd_server, tmp_path):
    """From "--run-time limit reached" to "Shutting down", a run whose users end at once (2 users with
    `constant(0)`, no on_stop, --reset-stats's test_stop listener) spends only its own work, about 0.02
    s here: before, it waited 0.21 s (0.1 s for the killed users in slices of 0.1, 0.1 s more for
    gevent's hub to leave squall's loop, and up to a second for --reset-stats's read). The bound, 0.15
    s, is below the least of those waits together and above that work on a host several times slower."""
    p = squall(
        "-f", FILES / "weights.py", "-H", odd_server.url, "--headless", "-u", 2, "-r", 100, "-t", "1s",
        "--only-summary", "--reset-stats", cwd=tmp_path, env=clean_env(STOP_AFTER_REQUESTS=10**9),
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    at = {
        m[5].strip(): datetime.strptime(m[1], "%Y-%m-%d %H:%M:%S,%f")
        for m in map(LOG_LINE.match, p.stderr.splitlines())
        if m
    }
    end = at["--run-time limit reached, shutting down"]
    exit_ = at["Shutting down (exit code 0)"]
    assert (exit_ - end).total_seconds() < 0.15, (end, exit_)


def test_reset_stats_and_equal_weights(odd_server, tmp_path):
    """--equal-weights: weights.py's 3:1 tasks run 1:1 (the share of each is within 5 sigma of 0.5 for
    the requests counted); --reset-stats says so when spawning completes, and the stats then leave out
    what came before, as Locust's do: fewer than the server saw, never more. The reset counts from the
    start of the second after spawning completes (0.1-0.2 s in), so the run must outlast that second by
    far: 20,000 requests took 1.02 s on a fast host (172 counted after the reset); 40,000 take 4 s at
    CI's 10,000 a second, 20 s on a host five times slower, within -t 60s."""
    p = squall(
        "-f", FILES / "weights.py", "-H", odd_server.url, "--headless", "-u", 2, "-r", 100, "-t", "60s",
        "--only-summary", "--equal-weights", "--reset-stats", "--json-file", "stats", cwd=tmp_path,
        env=clean_env(STOP_AFTER_REQUESTS=40000),
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    rows = {r["name"]: r["num_requests"] for r in json.loads((tmp_path / "stats.json").read_text())}
    heavy, light = rows["heavy"], rows["light"]
    n = heavy + light
    assert n >= 500 and abs(heavy / n - 0.5) < 5 * (0.25 / n) ** 0.5, (heavy, light)
    assert n < odd_server.served("/ok")  # the requests before the reset are not counted
    assert ("INFO", "locust.runners", "Resetting stats") in [(a, b, c.strip()) for a, b, c in log_records(p.stderr)]


def test_a_run_whose_users_all_died_says_so(tmp_path):
    """Every user's on_start raises: squall ends the test (nothing is left to run; Locust would run on
    with no user until -t), and says why, with how many users an exception ended, instead of ending
    as quietly as a run whose users stopped by themselves. The exit code is the exceptions' (1)."""
    (tmp_path / "failing.py").write_text(
        "from locust import User, constant, task\n\n\n"
        "class U(User):\n"
        "    wait_time = constant(1)\n\n"
        "    def on_start(self):\n"
        "        raise ConnectionRefusedError(111, 'Connection refused')\n\n"
        "    @task\n"
        "    def t(self):\n"
        "        pass\n"
    )
    t0 = time.monotonic()
    p = squall("-f", tmp_path / "failing.py", "--headless", "-u", 2, "-r", 10, "-t", "30s", "--only-summary")
    assert p.returncode == 1 and time.monotonic() - t0 < 20, p.stderr[-2000:]
    said = ("WARNING", "locust.main", "All 2 users have stopped, 2 of them ended by an exception (above)")
    assert said in log_records(p.stderr), p.stderr[-2000:]

"""Where squall behaved otherwise than Locust 2.47 on the same file (issue 25, section 3), now as Locust
does: each file is run by both tools against the same recording server, and what arrived, the counts,
the warnings, the exceptions and the exit code are compared. Runs are bounded: users stop after a
number of tasks (corpus/_bounded.py), shapes end by themselves, signals come after the first requests."""

import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from support import squall, squall_process, wait_until
from test_locust_corpus import CORPUS, USERS, Recorder, exceptions, received, run_both, stats

FILES = Path(__file__).parent / "locustfiles"


@pytest.fixture(scope="module")
def recorder():
    r = Recorder()
    yield r
    r.stop()


@pytest.mark.slow
def test_a_user_class_without_tasks_runs_and_fails_each_turn_as_in_locust(recorder, tmp_path):
    """A User class without tasks (Spoofed, as in Locust's x-forwarded-for.py). Both tools warn, start
    it (one user of each class), count 'No tasks defined on Spoofed' as its users' exceptions (as often as
    the machine allows: the counts differ), exit 1; Site's requests, with their X-Forwarded-For header,
    are the same; test_start saw the 2 users asked for as the runner's target."""
    both = run_both("x_forwarded_for.py", recorder, tmp_path, "--loglevel", "WARNING")
    (lp, lprefix, lrecords), (sp, sprefix, srecords) = both["locust"], both["squall"]
    assert lp.returncode == sp.returncode == 1, (lp.stderr[-2000:], sp.stderr[-2000:])
    warning = "Spoofed had no tasks left after filtering, instantiating it will fail!"
    assert warning in lp.stderr and warning in sp.stderr
    assert (
        set(exceptions(sprefix))
        == set(exceptions(lprefix))
        == {
            "No tasks defined on Spoofed. Use the @task decorator or set the 'tasks' attribute of the User "
            "(or mark it as abstract = True if you only intend to subclass it)"
        }
    )
    assert stats(sprefix) == stats(lprefix)
    assert stats(sprefix)[("GET", "/target/2")] == (1, 0)
    assert received(srecords) == received(lrecords)
    for records in (srecords, lrecords):
        ips = {dict(r["headers"]).get("x-forwarded-for", "") for r in records}
        assert len(ips) == 1 and ips.pop().startswith("10.10.")


@pytest.mark.slow
def test_a_user_class_left_without_tasks_by_tags_runs_as_in_locust(recorder, tmp_path):
    """-T x leaves B (and its TaskSet) without tasks: both tools warn of each, and run; A's tagged task
    is all that is sent."""
    both = run_both("tags_taskless.py", recorder, tmp_path, "--loglevel", "WARNING", "-T", "x")
    (lp, lprefix, lrecords), (sp, sprefix, srecords) = both["locust"], both["squall"]
    assert lp.returncode == sp.returncode == 1, (lp.stderr[-2000:], sp.stderr[-2000:])
    for name in ("Inner", "B"):
        warning = f"{name} had no tasks left after filtering, instantiating it will fail!"
        assert warning in lp.stderr and warning in sp.stderr, name
    assert (
        set(exceptions(sprefix))
        == set(exceptions(lprefix))
        == {
            "No tasks defined on B. Use the @task decorator or set the 'tasks' attribute of the User (or mark it as "
            "abstract = True if you only intend to subclass it)"
        }
    )
    assert stats(sprefix) == stats(lprefix) == {("GET", "/a"): (10, 0), ("", "Aggregated"): (10, 0)}
    assert received(srecords) == received(lrecords)


@pytest.mark.slow
def test_a_shape_runs_past_run_time_as_in_locust(recorder, tmp_path):
    """-t 1s with a 3-second shape: both tools say -t is ignored and run the shape to its end; the users
    saw the shape's 2 users as the runner's target in test_start."""
    durations, ignored = {}, {}
    for tool in ("locust", "squall"):
        t0 = time.monotonic()
        both = run_both("shape_run_time.py", recorder, tmp_path, "--loglevel", "INFO", run_time="1s", tools=(tool,))
        durations[tool] = time.monotonic() - t0
        p, prefix, records = both[tool]
        assert p.returncode == 0, p.stderr[-2000:]
        said = [line for line in p.stderr.splitlines() if "The following option(s) will be ignored: " in line]
        ignored[tool] = said[0].split("ignored: ")[1] if said else None
        assert stats(prefix)[("GET", "/target/2")] == (2, 0)
        assert stats(prefix)[("GET", "/shaped")][0] >= 8  # two users, every 0.5 s, for 3 s (not 1 s)
        assert Counter(r["path"] for r in records)["/shaped"] == stats(prefix)[("GET", "/shaped")][0]
    assert min(durations.values()) >= 3.0, durations
    assert ignored["squall"] == ignored["locust"] == "--users, --spawn-rate, --run-time"


@pytest.mark.slow
def test_users_that_wait_for_ever_sleep_until_the_run_ends_as_in_locust(recorder, tmp_path):
    """Waits of float("inf") (constant, and between's upper bound) and of 1e30 s beside a user that works
    (issue 41): squall raised OverflowError in its timers (a traceback, exit code 1), and handed 1e30 s
    to the engine, which waited none. Both tools now send each sleeper's on_start and first task once and
    nothing more, stop at -t (the sleepers do not hold the run), exit 0 without an exception."""
    runs, durations = {}, {}
    for tool in ("locust", "squall"):
        t0 = time.monotonic()
        runs.update(run_both("sleeps_forever.py", recorder, tmp_path, "-u", 4, run_time="2s", tools=(tool,)))
        durations[tool] = time.monotonic() - t0
    (lp, lprefix, lrecords), (sp, sprefix, srecords) = runs["locust"], runs["squall"]
    assert lp.returncode == sp.returncode == 0, (lp.stderr[-2000:], sp.stderr[-2000:])
    assert "Traceback" not in sp.stderr and "OverflowError" not in sp.stderr, sp.stderr[-2000:]
    assert exceptions(sprefix) == exceptions(lprefix) == {}
    assert received(srecords) == received(lrecords)
    sleepers = {("GET", p): (1, 0) for p in ("/forever/on_start", "/forever/task", "/unbounded", "/eons")}
    assert stats(sprefix) == stats(lprefix) == {**sleepers, ("GET", "/site"): (10, 0), ("", "Aggregated"): (14, 0)}
    assert max(durations.values()) < 2 + 10, durations  # -t, then the process's start and end


def _default_sigint():
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.slow
@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGTERM])
@pytest.mark.parametrize("failing", [False, True])
def test_a_stop_signal_exits_with_locusts_code(recorder, tmp_path, how, failing):
    """Ctrl-C or SIGTERM once requests arrive: Locust exits with the code it would have had at the end
    (0, or 1 when a request failed), and squall -f now does the same (bench and mqtt keep 130/143)."""
    codes = {}
    env = dict(os.environ, PYTHONPATH=str(CORPUS), SIGNALS_FAIL="1" if failing else "")
    for tool in ("locust", "squall"):
        recorder.reset()
        args = ["-f", CORPUS / "signals.py", "--headless", "-u", USERS, "-t", "60s", "-H", recorder.url]
        args += ["--csv", tmp_path / tool, "--only-summary"]
        if tool == "locust":
            cmd = [sys.executable, "-m", "locust", *map(str, args)]
            # Ctrl-C as a terminal sends it: a suite started in the background of a shell (SIGINT ignored,
            # and inherited) would leave Locust deaf to it for the whole -t, as squall is not (take_ctrl_c).
            proc = subprocess.Popen(
                cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, preexec_fn=_default_sigint
            )
        else:
            proc = squall_process(*args, env=env)
        # 4 requests answered before the signal: at most USERS of those the recorder saw are still in flight
        wait_until(lambda: len(recorder.log()) >= 4 + USERS, "requests at the recorder", proc)
        proc.send_signal(how)
        _out, err = proc.communicate(timeout=60)
        codes[tool] = proc.returncode
        assert "Shutting down (exit code" in err, err[-2000:]
    assert codes["squall"] == codes["locust"] == (1 if failing else 0), codes
    assert stats(tmp_path / "squall")[("", "Aggregated")][0] >= 4  # squall's files hold the run, as before


@pytest.mark.slow
def test_a_pytest_style_locustfile_runs_as_in_locust(recorder, tmp_path):
    """Locust 2.40's pytest-style files: test functions taking the `session`/`fastsession` fixtures are
    User classes (one user each here). The same requests arrive, the same failures (the judged one, the
    404 that raise_for_status ended the call with), no exceptions, exit code 1 (the failures); the
    assertion that ends test_other's user is printed by both."""
    # Copied out of the tests, whose pytest must not collect it (and named as a test module, as Locust's
    # example is: pytest collects a file it is given whatever its name).
    shutil.copy(FILES / "pytest_style.py", tmp_path / "test_pytest_style.py")
    out = {}
    for tool in ("locust", "squall"):
        recorder.reset()
        prefix = tmp_path / tool
        args = ["-f", tmp_path / "test_pytest_style.py", "--headless", "-u", 2, "-r", 50, "-t", "8s"]
        args += ["-H", recorder.url, "--csv", prefix, "--only-summary"]
        env = dict(os.environ, CALLS="3")
        if tool == "locust":
            cmd = [sys.executable, "-m", "locust", *map(str, args)]
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=90, env=env, cwd=tmp_path)
        else:
            p = squall(*args, env=env, timeout=90, cwd=tmp_path)
        out[tool] = (p, prefix, recorder.log())
    (lp, lprefix, lrecords), (sp, sprefix, srecords) = out["locust"], out["squall"]
    assert lp.returncode == sp.returncode == 1, (lp.stderr[-2000:], sp.stderr[-2000:])
    assert received(srecords) == received(lrecords)
    expected = {("GET", "/pt/one"): (3, 0), ("GET", "/status/404"): (3, 3), ("GET", "/pt/fast"): (3, 3)}
    expected.update({("GET", "/pt/base"): (3, 0), ("", "Aggregated"): (12, 6)})
    assert stats(sprefix) == stats(lprefix) == expected
    assert exceptions(sprefix) == exceptions(lprefix) == {}
    for p in (lp, sp):
        assert "AssertionError: the last call fails: that user ends" in p.stderr
        assert "failed with AssertionError" in p.stderr


def test_a_pytest_style_file_with_an_unknown_fixture_is_one_line_exit_2(tmp_path):
    (tmp_path / "test_bad.py").write_text("def test_x(sesion):\n    sesion.get('/')\n")
    p = squall("-f", tmp_path / "test_bad.py", "--headless", "-t", "1s", "-H", "http://127.0.0.1:1", cwd=tmp_path)
    assert p.returncode == 2 and "Could not find fixture for parameter 'sesion' in test_x" in p.stderr, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1


@pytest.mark.slow
@pytest.mark.parametrize("case", ["raise", "fail", "init"])
def test_a_listener_that_raises_is_logged_and_the_run_goes_on_as_in_locust(recorder, tmp_path, case):
    """A request listener raising for every /first, and a test_stop listener raising: Locust logs each
    (the traceback on the root logger), the user goes on to /second, the listener after the one that
    raised still hears /first, quitting runs, the CSVs are written, no task exception is counted, and the
    exit code is 2, or --exit-code-on-error's 1 when a request failed (case "fail"); quitting's listeners
    run last added first, with `environment` alone (squall gave a `reason` too: a TypeError in a listener
    taking only `environment`). squall stopped the
    task at the listener's exception (every /first was an exception, /second never sent) and ended the
    run at test_stop's, exit 1 without CSVs or quitting. An init listener's exception ends both at once,
    exit 1, nothing sent (case "init")."""
    env = {"ITERATIONS": "3", "LISTENERS_FAIL": "1" if case == "fail" else "", "LISTENERS_INIT": ""}
    env["LISTENERS_INIT"] = "1" if case == "init" else ""
    both = run_both("listeners_raise.py", recorder, tmp_path, env=env, run_time="2s")
    (lp, lprefix, lrecords), (sp, sprefix, srecords) = both["locust"], both["squall"]
    expected = {"raise": 2, "fail": 1, "init": 1}[case]
    assert lp.returncode == sp.returncode == expected, (lp.returncode, sp.returncode, sp.stderr[-3000:])
    said = {tool: p.stderr.count("Uncaught exception in event handler") for tool, (p, _, _) in both.items()}
    if case == "init":
        assert lrecords == srecords == [] and said["squall"] == said["locust"] == 1, said
        assert "init listener boom" in sp.stderr
        return
    assert received(srecords) == received(lrecords)
    second = "/status/500" if case == "fail" else "/second"
    assert Counter(r["path"] for r in srecords) == {"/first": USERS * 3, second: USERS * 3}
    assert stats(sprefix) == stats(lprefix)
    assert exceptions(sprefix) == exceptions(lprefix) == {}
    # every /first's, and test_stop's
    assert said["squall"] == said["locust"] == USERS * 3 + 1, said
    for p in (lp, sp):
        assert "ValueError: request listener boom" in p.stderr and "KeyError: 'test_stop boom'" in p.stderr
        assert p.stdout.count("AFTER_FIRST") == USERS * 3, p.stdout[-2000:]
        quitting = [line for line in p.stdout.splitlines() if line.startswith("QUITTING")]
        assert quitting == ["QUITTING_RAN", "QUITTING_PLAIN"], p.stdout[-2000:]  # reversed, `environment` alone


@pytest.mark.slow
def test_a_shapes_stages_spawn_their_classes_and_complete_as_in_locust(recorder, tmp_path):
    """tests/locustfiles/corpus/shape_stages.py: each stage's spawning completes in both tools (the event
    with the stage's users, `environment.shape_class` the shape's instance whose
    get_current_user_count() a listener reads, and the same "All users spawned" lines); the second stage,
    [B, C] with C's fixed_count 1, adds a B, so the server receives /a and /b and never /c. squall fired
    spawning_complete for the first stage only, had the shape's class there (a TypeError), and added
    C's users."""
    both = run_both("shape_stages.py", recorder, tmp_path, "--loglevel", "INFO", run_time="1s")
    said = {}
    for tool, (p, _prefix, records) in both.items():
        assert p.returncode == 0, (tool, p.stderr[-3000:])
        assert {r["path"] for r in records} == {"/a", "/b"}, (tool, Counter(r["path"] for r in records))
        lines = [line for line in p.stdout.splitlines() if line.startswith(("SHAPE", "SPAWNED"))]
        spawned = [m.split("All users spawned: ", 1)[1] for m in p.stderr.splitlines() if "All users spawned: " in m]
        said[tool] = (lines, spawned)
    assert (
        said["squall"]
        == said["locust"]
        == (
            ["SHAPE Stages True", "SPAWNED 2 2", "SPAWNED 3 3", "SPAWNED 1 1"],
            [
                '{"A": 2, "B": 0, "C": 0} (2 total users)',
                '{"A": 2, "B": 1, "C": 0} (3 total users)',
                '{"A": 1, "B": 0, "C": 0} (1 total users)',
            ],
        )
    ), said

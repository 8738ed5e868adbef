"""squall.runtime.lifecycle: the one loop every kind of run goes through (issue 41). Its policy pinned
on a run of known passes: the line shown each pass and cleared at the end (an exception too), the
followers passed over each pass, the last publication with the run's fields, and real stop signals
(sent to this process) noted in order and handed to the run with their count."""

import ast
import os
import signal
from pathlib import Path

import pytest

from squall.runtime.follow import Follower
from squall.runtime.lifecycle import Lifecycle

PACKAGE_DIR = Path(__file__).resolve().parents[2] / "python" / "squall"


class _Run:
    """A run of `passes` passes; at pass `signal_at` (1-based) it sends itself `signals` (each is
    delivered before `os.kill` returns: Python runs the handler at the next bytecode boundary)."""

    def __init__(self, passes, signal_at=None, signals=(), fail_at=None):
        self.passes, self.signal_at, self.signals, self.fail_at = passes, signal_at, signals, fail_at
        self.done = 0
        self.stops = []

    def step(self):
        if self.done == self.fail_at:
            raise RuntimeError("the run broke")
        if self.done == self.passes:
            return True
        self.done += 1
        if self.done == self.signal_at:
            for s in self.signals:
                os.kill(os.getpid(), s)
        return False

    def fields(self):
        return {"users": self.done, "state": "running"}

    def progress(self):
        return self.done

    def on_signal(self, signum, count):
        self.stops.append((signum, count))


class _Line:
    def __init__(self):
        self.shown, self.cleared = [], 0

    def show(self, progress):
        self.shown.append(progress)

    def clear(self):
        self.cleared += 1


class _Publisher:
    """Due on every pass, so each tick publishes: what it was given is what the page would get."""

    def __init__(self):
        self.published = []

    def start(self, started, **state):
        self.published.append(("start", state))

    def due(self):
        return True

    def tick(self, force=False, **fields):
        self.published.append(("tick", fields))
        return fields


class _Controls:
    def stop(self, why):
        pass

    def reset(self):
        pass

    def set_users(self, users, spawn_rate):
        pass


def _follower():
    publisher = _Publisher()
    return Follower(_Controls(), publisher), publisher


def test_each_pass_shows_the_line_and_ticks_and_the_end_publishes_the_runs_fields():
    run, line = _Run(passes=3), _Line()
    follower, publisher = _follower()
    life = Lifecycle(run)
    follower.begin(state="running")
    with life.signals():
        life.follow(run, follower, line, state="stopping")
    assert line.shown == [1, 2, 3]
    assert line.cleared == 1
    ticks = [fields for kind, fields in publisher.published if kind == "tick"]
    # three passes, then the end: the run's fields with the end's over them
    assert ticks == [{"users": n, "state": "running"} for n in (1, 2, 3)] + [{"users": 3, "state": "stopping"}]
    assert life.signum is None and run.stops == []


def test_a_run_that_raises_still_clears_the_line():
    run, line = _Run(passes=5, fail_at=2), _Line()
    follower, _ = _follower()
    with pytest.raises(RuntimeError):
        Lifecycle(run).follow(run, follower, line)
    assert line.cleared == 1 and line.shown == [1, 2]


def test_stop_signals_are_noted_in_order_and_handed_to_the_run_with_their_count():
    run = _Run(passes=2, signal_at=1, signals=(signal.SIGTERM, signal.SIGINT))
    follower, _ = _follower()
    life = Lifecycle(run)
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    with life.signals() as received:
        life.follow(run, follower)
    assert received == [signal.SIGTERM, signal.SIGINT]
    assert life.signum == signal.SIGTERM  # the first is the run's
    assert run.stops == [(signal.SIGTERM, 1), (signal.SIGINT, 2)]
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before  # restored


def _calls(path, attr):
    """The lines of `path` that call a method named `attr` on something whose name has 'follower' in it."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == attr:
            receiver = ast.unparse(node.func.value)
            if "follower" in receiver:
                found.append(f"{path.relative_to(PACKAGE_DIR)}:{node.lineno} {receiver}.{attr}")
    return found


def test_one_run_loop():
    """Issue 41: the run's loop is written once. No module passes over a run's followers but the
    lifecycle, and the three kinds of run (bench and MQTT, a locustfile's test, a distributed run) are
    each driven by it."""
    lifecycle = PACKAGE_DIR / "runtime" / "lifecycle.py"
    outside = [
        call
        for path in sorted(PACKAGE_DIR.rglob("*.py"))
        if path != lifecycle
        for attr in ("tick", "end")
        for call in _calls(path, attr)
    ]
    assert not outside, outside
    for module, kind in (
        ("commands/drive.py", "EngineRun"),
        ("commands/run_test.py", "ScriptTest"),
        ("distributed/driver.py", "Driver"),
    ):
        tree = ast.parse((PACKAGE_DIR / module).read_text())
        classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
        methods = {f.name for f in classes[kind].body if isinstance(f, ast.FunctionDef)}
        assert {"step", "fields", "progress"} <= methods, (module, kind, methods)
        assert ".follow(" in (PACKAGE_DIR / module).read_text(), module

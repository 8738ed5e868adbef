"""The runner's surface (`locust.runners`) and `environment.web_ui`, against Locust 2.47's values and
behaviour as its source has them (locust/runners.py, locust/rpc/protocol.py)."""

import logging

import pytest

from squall import locust_compat, runners, stats
from squall.env import Environment
from squall.errors import UsageError
from squall.event import Events
from squall.user.users import User
from squall.web.server import Dashboard, LiveStore


def test_state_constants_are_locusts():
    assert [
        runners.STATE_INIT,
        runners.STATE_SPAWNING,
        runners.STATE_RUNNING,
        runners.STATE_CLEANUP,
        runners.STATE_STOPPING,
        runners.STATE_STOPPED,
        runners.STATE_MISSING,
    ] == ["ready", "spawning", "running", "cleanup", "stopping", "stopped", "missing"]
    assert Environment(events=Events()).runner.state == runners.STATE_INIT


def test_messages_are_delivered_locally_as_locusts_local_runner(caplog):
    env = Environment(events=Events())
    runner = env.runner
    got = []
    runner.register_message("hello", lambda **kw: got.append(kw))
    runner.register_message("other", lambda **kw: got.append(kw), concurrent=True)
    with pytest.raises(Exception) as duplicate:
        runner.register_message("hello", print)
    assert str(duplicate.value) == "Tried to register listener method for hello, but it already had a listener!"
    runner.send_message("hello", {"a": 1})
    runner.send_message("other")
    assert [sorted(kw) for kw in got] == [["environment", "msg"], ["environment", "msg"]]
    assert all(kw["environment"] is env for kw in got)
    assert [(m.type, m.data, m.node_id, repr(m)) for m in (kw["msg"] for kw in got)] == [
        ("hello", {"a": 1}, "local", "<Message hello:local>"),
        ("other", None, "local", "<Message other:local>"),
    ]
    with caplog.at_level(logging.WARNING, logger="locust.runners"):
        runner.send_message("nobody")
    assert [(r.name, r.levelname, r.getMessage()) for r in caplog.records] == [
        ("locust.runners", "WARNING", "Unknown message type received: nobody")
    ]


def test_runner_stats_and_counts():
    class A(User):
        pass

    class B(User):
        pass

    env = Environment(user_classes=[A, B], events=Events())
    runner = env.runner
    assert runner.stats is env.stats and runner.errors == {}
    assert isinstance(env.stats, stats.RequestStats)
    runner.users[object.__new__(A)] = None
    assert runner.user_classes_count == {"A": 1, "B": 0} and runner.user_count == 1
    assert (runner.worker_index, runner.worker_count) == (0, 1)
    assert isinstance(runner, runners.LocalRunner) and not isinstance(runner, runners.MasterRunner)


def test_locust_stats_is_squalls():
    assert locust_compat.ALIASES["locust.stats"] is stats


def test_web_ui_is_none_headless_and_has_no_flask_app():
    env = Environment(events=Events())
    assert env.web_ui is None and env.use_dashboard(None) is None
    dashboard = Dashboard(LiveStore({"controls": {}}, "http"), "127.0.0.1", 0)
    try:
        web_ui = env.use_dashboard(dashboard)
        assert env.web_ui is web_ui and web_ui.host == "127.0.0.1" and web_ui.port > 0
        with pytest.raises(UsageError) as e:
            web_ui.app.route("/added_page")
        message = str(e.value)
        assert "\n" not in message and "not a Flask app" in message and "app.route" in message
    finally:
        dashboard.server.server_close()

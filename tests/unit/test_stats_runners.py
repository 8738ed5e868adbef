"""The runner's surface (`locust.runners`) and `environment.web_ui`, against Locust 2.47's values and
behaviour as its source has them (locust/runners.py, locust/rpc/protocol.py)."""

import logging

import pytest

from squall import locust_compat, log, runners, stats
from squall.env import Environment
from squall.event import Events
from squall.exception import InterruptTaskSet, RescheduleTask, RescheduleTaskImmediately, StopUser
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


def test_web_ui_is_none_headless_and_a_flask_app_beside_the_dashboard():
    env = Environment(events=Events())
    assert env.web_ui is None and env.use_dashboard(None) is None
    dashboard = Dashboard(LiveStore({"controls": {}}, "http"), "127.0.0.1", 0)
    try:
        web_ui = env.use_dashboard(dashboard)
        assert env.web_ui is web_ui and web_ui.host == "127.0.0.1" and web_ui.port > 0
        assert dashboard.web_app is None  # Flask only once a file uses the app
        web_ui.app.route("/added_page")(lambda: "added")
        assert type(web_ui.app).__name__ == "Flask" and dashboard.web_app is not None
        assert web_ui.auth_required_if_enabled(len) is len  # without --web-login
        with pytest.raises(AttributeError):
            web_ui.login_manager  # noqa: B018  # --web-login only, as in Locust
    finally:
        dashboard.server.server_close()


def test_a_worker_and_its_master_exchange_messages_and_reports(monkeypatch):
    """A worker's runner (SQUALL_WORKER set) queues its messages for the feed and fires
    report_to_master; the master's runner gets them as Locust's master does (worker_report, the
    listener with the worker's client id); the master's messages are delivered by the worker's loop."""
    monkeypatch.setenv("SQUALL_WORKER", "1/3")
    ev = Events()
    worker_env = Environment(events=ev)
    worker = worker_env.runner
    assert isinstance(worker, runners.WorkerRunner) and (worker.worker_index, worker.worker_count) == (1, 3)
    worker.send_message("hello", {"n": 1})
    assert worker.outbox == []  # no master to send to (a --processes worker)
    worker.has_master = True
    worker.send_message("hello", {"n": 1})
    ev.report_to_master.add_listener(lambda client_id, data, **kw: data.update(mine=client_id))
    report = worker.report()
    assert worker.outbox == [("hello", {"n": 1})] and report == {"mine": worker.client_id}

    monkeypatch.delenv("SQUALL_WORKER")
    master_env = Environment(events=ev)
    master = runners.MasterRunner(master_env)
    master_env.runner = master
    got, reports = [], []
    master.register_message("hello", lambda environment, msg, **kw: got.append((msg.data, msg.node_id)))
    ev.worker_report.add_listener(lambda client_id, data, **kw: reports.append((client_id, data)))
    master.received(worker.client_id, 1, [dict(report, squall_user_count=5)], worker.outbox)
    assert got == [({"n": 1}, worker.client_id)] and reports == [(worker.client_id, report)]
    assert master.worker_count == 1 and master.user_count == 5
    master.lost(worker.client_id)
    assert master.worker_count == 0
    master.send_message("config", 42)
    assert master.outbox == [("config", 42, None)]

    seen = []
    worker.register_message("config", lambda environment, msg, **kw: seen.append((msg.data, msg.node_id)))
    worker.inbox.put(("config", 42))
    worker.deliver()  # no hub here: at once
    assert seen == [(42, "master")]


@pytest.mark.parametrize("hook", ["test_stop", "request"])
def test_a_listener_that_raises_is_logged_and_the_others_still_run(caplog, monkeypatch, hook):
    """Locust's EventHook.fire (locust/event.py): an exception in a listener is logged on the root logger
    ("Uncaught exception in event handler" and its traceback), marks the process
    (`unhandled_greenlet_exception`, exit code 2 at its end), and the next listeners run; the request
    event's `notify` (squall's clients' path) likewise."""
    monkeypatch.setattr(log, "unhandled_greenlet_exception", False)
    events, heard = Events(), []
    event = getattr(events, hook)

    def boom(**_kw):
        raise ValueError("listener boom")

    event.add_listener(boom)
    event.add_listener(lambda **kw: heard.append(kw))
    with caplog.at_level(logging.ERROR):
        if hook == "request":
            event.notify(name="/x", exception=None)
        else:
            event.fire(environment=None)
    assert heard == [{"name": "/x", "exception": None} if hook == "request" else {"environment": None}]
    assert log.unhandled_greenlet_exception
    [record] = caplog.records
    assert record.name == "root" and record.getMessage().startswith("Uncaught exception in event handler: \n")
    assert "ValueError: listener boom" in record.getMessage() and "in boom" in record.getMessage()


@pytest.mark.parametrize("flow", [StopUser, RescheduleTask, RescheduleTaskImmediately, InterruptTaskSet])
def test_a_listener_may_stop_or_reschedule_its_user_as_in_locust(monkeypatch, flow):
    """What Locust's fire lets through: the user's flow, raised from a request listener into the task."""
    monkeypatch.setattr(log, "unhandled_greenlet_exception", False)
    events, heard = Events(), []

    def stop(**_kw):
        raise flow()

    events.request.add_listener(stop)
    events.request.add_listener(lambda **kw: heard.append(kw))
    with pytest.raises(flow):
        events.request.notify(name="/x")
    assert heard == [] and not log.unhandled_greenlet_exception

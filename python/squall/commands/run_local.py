"""A locustfile's run in this process (`run_here`): the dashboard (one test after another from its
page, as Locust's web UI starts a new one after a Stop), the engine and its hub, Locust's events of a
run's life, each test (squall.commands.run_test) under the run's lifecycle (squall.runtime.lifecycle),
and the outputs (squall.commands.run_output).

A test is measured from its Start: a test the page starts gets a new engine then, whose clock, time
series and totals begin there (the engine made with the hub only serves `init`, before any test)."""

from __future__ import annotations

import argparse
import os
import signal
import sys
from typing import TYPE_CHECKING, Any

from squall import _engine, monitor, processes
from squall.clients import split_userinfo
from squall.commands import run_checks, run_output
from squall.commands.drive import observe
from squall.commands.run_test import WATCH_EVERY, Interrupt, ScriptTest, Watchdog
from squall.distributed.feed import FEED_ENV, wait_for_start, worker_feed
from squall.env import Environment
from squall.event import events
from squall.exception import user_traceback
from squall.log import main_logger, task_logger
from squall.monitor import GeneratorWatch
from squall.report import locust_errors
from squall.runners import WorkerRunner
from squall.runtime import gevent_hub, limits
from squall.runtime.hub import Hub
from squall.runtime.lifecycle import Lifecycle
from squall.runtime.signals import deferred
from squall.runtime.sleep import cooperative_sleep, real_sleep
from squall.stats import FiredRequests
from squall.user.users import HttpUser
from squall.web import live, page

if TYPE_CHECKING:
    from squall.shape import LoadTestShape
    from squall.user.users import User
    from squall.web.server import Dashboard


def run_here(
    args: argparse.Namespace,
    classes: list[type[User]],
    shape_class: type[LoadTestShape] | None,
    users: int,
    spawn_rate: float,
    run_time: float | None,
    stop_timeout: float,
    target_monitor: monitor.Monitor | None,
) -> int:
    """The run in this process: the dashboard, the engine and hub, the test (or, from the dashboard, one
    test after another, as Locust's web UI starts a new one after a Stop), the outputs.

    A test is measured from its Start: a test the page starts gets a new engine then, whose clock, time
    series and totals begin there (the engine made with the hub only serves `init`, before any test)."""
    worker = processes.worker()
    if worker is not None:
        wait_for_start()  # a Ray worker starts when the driver says (a no-op for --processes)
    limits.ensure_open_files(max(users, 1))  # one keep-alive connection per user
    web = not args.headless and not worker
    dashboard = _start_dashboard(args, classes, users, spawn_rate, shape_class) if web else None
    hub = Hub(new_engine(args))
    cooperative_sleep.hub = hub
    env = Environment(hub=hub, host=args.host, user_classes=classes, parsed_options=args, shape_class=shape_class)
    if gevent_hub.enabled():  # the locustfile's libraries wait on gevent's hub: squall's runs in it
        hub.use_gevent(gevent_hub.bind(hub, env))
    shape = shape_class() if shape_class else None
    if shape:
        shape.runner = env.runner
    if isinstance(env.runner, WorkerRunner) and os.environ.get(FEED_ENV):
        env.runner.listen_to_master()  # a distributed worker: its master is the driver
    events.user_error.add_listener(_log_task_error)
    # A request the locustfile fires itself (a custom client) is counted, as Locust's stats listen to
    # the event; squall's own clients recorded theirs in the engine and only notify the listeners.
    events.request.recorder = FiredRequests(lambda: hub.engine)
    events.request.on_listen = hub.end_plans  # native users go on in Python, seen by the new listener
    events.init.fire(environment=env, runner=env.runner, web_ui=env.use_dashboard(dashboard, args.web_login))

    watchdog = Watchdog(hub)
    life = Lifecycle(Interrupt(env, watchdog, stop_timeout))
    received = life.received

    generator = GeneratorWatch()
    feed = worker_feed()
    if feed is not None and isinstance(env.runner, WorkerRunner):
        feed.runner = env.runner
    partial: live.PartialFiles | None = None
    # Locust's web UI without --autoquit: after a test, the page may start another (New), until Ctrl-C.
    new_tests = dashboard is not None and args.autoquit is None and worker is None
    tests = 0
    last: dict[str, Any] | None = None  # the last test's result, once its outputs are written (new_tests)
    idle = False  # the run ended while it waited for the page's Start
    reason = "interrupted"
    # From here until the outputs are written a stop signal is deferred (the run's own handler takes it
    # while a test runs): a second Ctrl-C must not cut the result or a file short.
    with deferred():
        previous_alarm = signal.signal(signal.SIGALRM, watchdog)
        signal.setitimer(signal.ITIMER_REAL, WATCH_EVERY, WATCH_EVERY)
        try:
            with life.signals():
                while True:
                    waits = dashboard is not None and (tests > 0 or not args.autostart)
                    start = _wait_for_start(dashboard, received, again=tests > 0) if dashboard and waits else {}
                    if start is None:
                        idle = True
                        break
                    users = start.get("users", users)
                    spawn_rate = start.get("spawn_rate", spawn_rate)
                    limits.ensure_open_files(max(users, 1))  # the page's users (checked against the limit)
                    if start.get("host") and start["host"] != split_userinfo(args.host or "")[0]:  # a new host
                        env.host = args.host = start["host"]
                    if waits:  # the test starts now: so do its engine's clock, time series and totals
                        hub.use_engine(new_engine(args))
                        env.begin_test()
                        watchdog.end_by = None
                        if shape:
                            shape.reset_time()
                        if tests > 0:
                            generator = GeneratorWatch()
                            target_monitor = monitor.Monitor.from_args(args)
                    tests += 1
                    load = {"model": "open" if args.rate else "users", "users": users, "spawn_rate": spawn_rate}
                    partial = feed or live.partial_files(
                        args.result_json if worker is None else None, "http", args.host or "", load
                    )
                    if dashboard is not None:
                        shown_host = split_userinfo(args.host or "")[0]
                        dashboard.store.begin_test(host=shown_host, spawn_rate=spawn_rate, state="spawning")
                    test = ScriptTest(
                        env, hub, classes, shape, users, spawn_rate, run_time, stop_timeout, args, dashboard, partial,
                        generator, target_monitor, watchdog,
                    )  # fmt: skip
                    reason = test.run(life)
                    # The locustfile's runner.quit() ends the process, as in Locust (a threshold's abort, the
                    # page's Stop and the users' own end only end the test).
                    watch = args.watch
                    quit_by_file = env.runner.quitting and reason == "completed" and not (watch and watch.failed)
                    if not new_tests or received or quit_by_file:
                        break  # the outputs below, once
                    assert dashboard is not None
                    last = end_test(env, hub, args, reason, generator, target_monitor)
                    verdicts = run_output.judge(last, args)
                    run_output.print_and_write(last, args, verdicts, *run_output.exit_code(last, args, env))
                    if partial is not None:
                        partial.done()
                    dashboard.store.finish(last)
                    if tests == 1:
                        main_logger.info("--autoquit not specified, leaving web ui running indefinitely")
                        url = dashboard.url
                        sys.stderr.write(f"squall: the test ended; its dashboard stays at {url} (New starts another)\n")
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous_alarm)
            events.user_error.remove_listener(_log_task_error)
            events.request.recorder = None
            events.request.on_listen = None
            gevent_hub.unbind(hub)
        if idle and last is not None:  # Ctrl-C after the dashboard's tests: Locust's end of its web UI
            assert dashboard is not None
            events.quitting.fire(environment=env, reason="shutdown")
            code, _why = run_output.exit_code(last, args, env)
            main_logger.info(f"Shutting down (exit code {code})")
            events.quit.fire(exit_code=code)
            dashboard.stop()
            return code
        if received:
            reason = "interrupted"
            if signal.SIGTERM in received:
                main_logger.info("Got SIGTERM signal")
        result = end_test(env, hub, args, reason, generator, target_monitor)
        verdicts = run_output.judge(result, args) if worker is None else []
        events.quitting.fire(environment=env, reason=reason)
        code, why = run_output.exit_code(result, args, env, received)
        main_logger.info(f"Shutting down (exit code {code})")
        if worker is not None:
            processes.write_result(result)
        else:
            run_output.print_and_write(result, args, verdicts, code, why)
        if partial is not None:
            partial.done()
    events.quit.fire(exit_code=code)
    if dashboard is not None:
        waits = not received and (args.autoquit is None or args.autoquit < 0)
        if waits:
            main_logger.info("--autoquit not specified, leaving web ui running indefinitely")
        live.serve_the_end(dashboard, result, args.autoquit, life.signum)
        if not received and not waits:
            main_logger.info("--autoquit time reached, shutting down")
    return code


def new_engine(args: argparse.Namespace) -> _engine.ScriptEngine:
    return _engine.ScriptEngine(insecure=args.insecure, http2=args.http2)


def end_test(
    env: Environment,
    hub: Hub,
    args: argparse.Namespace,
    reason: str,
    generator: GeneratorWatch,
    target_monitor: monitor.Monitor | None,
) -> dict[str, Any]:
    """The test's result: the engine's, with the exceptions, failures in Locust's words, the generator's
    watch and the target's resources."""
    result = hub.finish(reason, page.redact_argv([args.host])[0] if args.host else "")
    result["exceptions"] = [dict(x, nodes="local") for x in env.exceptions.values()]
    locust_errors.annotate(result["errors"], fast=locust_errors.fast_http(env.user_classes))
    observe(result, generator, target_monitor)
    env.result = result
    return result


def _log_task_error(user_instance: Any = None, exception: BaseException | None = None, **_kw: Any) -> None:
    """An exception in a task, logged as Locust's task runner logs it."""
    if exception is not None:
        task_logger.error("%s\n%s", exception, user_traceback(exception))


def _start_dashboard(
    args: argparse.Namespace,
    classes: list[type[User]],
    users: int,
    spawn_rate: float,
    shape_class: type[LoadTestShape] | None,
) -> Dashboard:
    """The dashboard (Locust's web UI options mapped to squall's), and Locust's line saying where."""
    if args.web_host in ("*", ""):  # Locust's "every interface"
        args.web_host = "0.0.0.0"
    interactive = shape_class is None and not args.rate
    # Start: the form before the first test, and New after each one (unless --autoquit ends the run).
    new = args.autoquit is None
    controls = {"start": not args.autostart or new, "users": interactive, "stop": True, "reset": True, "new": new}
    shown_host = split_userinfo(args.host or "")[0]  # the page never sees the credentials
    # An HTTP User class without a host needs one from the form: refused without (Locust would start and
    # stop at once); the page says which class.
    hostless = [] if args.host else [c.__name__ for c in classes if issubclass(c, HttpUser) and not c.host]
    form = {"users": users, "spawn_rate": spawn_rate, "host": shown_host, "host_required": ", ".join(hostless) or None}
    load = {"model": "open" if args.rate else "users", "users": users, "spawn_rate": spawn_rate, "rate": args.rate}
    # the page shows the command line
    shown = argparse.Namespace(**{**vars(args), "argv": run_output.redact_secrets(args)})
    dashboard = live.start(shown, "run", "http", args.host or "", controls=controls, form=form, load=load)
    # The page's Start gets the command line's checks (its users and host, for these User classes).
    dashboard.check_start = lambda u, host: run_checks.check(classes, host or args.host, u, shape_class, False)
    dashboard.store.meta["title"] = f"squall: {os.path.basename(args.locustfile)}"
    url = args.web_host_display_name or dashboard.url.rstrip("/")
    main_logger.info(f"Starting web interface at {url}, press enter to open your default browser.")
    return dashboard


def _wait_for_start(dashboard: Dashboard, received: list[int], again: bool = False) -> dict[str, Any] | None:
    """Without --autostart the run starts from the dashboard, as Locust's does, and `again` (after a test)
    the page's New starts another; None on a signal, or the page's Stop before the first test."""
    if not again:
        sys.stderr.write(f"squall: open {dashboard.url} to start the test\n")
        dashboard.store.set(state="ready")
    dashboard.store.set(startable=True)
    while not received:
        taken = dashboard.take_commands()
        dashboard.obeyed()  # (a Start's answer does not wait; a Stop's here is obeyed below)
        for action, command in taken:
            if action == "start":
                return command
            if action == "stop" and not again:
                dashboard.store.set(startable=False)
                return None
        real_sleep(0.05)
    dashboard.store.set(startable=False)
    return None

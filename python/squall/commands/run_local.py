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
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from squall import _engine, exitcodes, log, monitor, processes
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
from squall.user.users import SessionUser
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
    test after another, as Locust's web UI starts a new one after a Stop), the outputs; returns the
    exit code."""
    worker = processes.worker()
    if worker is not None:
        wait_for_start()  # a Ray worker starts when the driver says (a no-op for --processes)
    limits.ensure_open_files(max(users, 1))  # one keep-alive connection per user
    web = not args.headless and not worker
    dashboard = _start_dashboard(args, classes, users, spawn_rate, shape_class) if web else None
    local = LocalRun(args, classes, shape_class, dashboard, run_time, stop_timeout, target_monitor)
    if log.unhandled_greenlet_exception:  # an init (or init_command_line_parser) listener raised: as in
        local.unhook()  # Locust, fatal, its traceback logged already
        if dashboard is not None:
            dashboard.stop()
        return exitcodes.ALL_FAILED
    # From here until the outputs are written a stop signal is deferred (the run's own handler takes it
    # while a test runs): a second Ctrl-C must not cut the result or a file short.
    with deferred():
        with local.clock(), local.life.signals():
            local.tests(users, spawn_rate)
        code = local.end()
    events.quit.fire(exit_code=code)
    local.serve_the_end()
    return code


class LocalRun:
    """A locustfile's run in this process, made ready for its first test (the hub and its engine, the
    Environment, Locust's `init`), then its tests (`tests`), then its end (`end`, `serve_the_end`)."""

    def __init__(
        self,
        args: argparse.Namespace,
        classes: list[type[User]],
        shape_class: type[LoadTestShape] | None,
        dashboard: Dashboard | None,
        run_time: float | None,
        stop_timeout: float,
        target_monitor: monitor.Monitor | None,
    ) -> None:
        self.args, self.classes, self.dashboard = args, classes, dashboard
        self.run_time, self.stop_timeout, self.target_monitor = run_time, stop_timeout, target_monitor
        self.worker = processes.worker()
        self.hub = hub = Hub(new_engine(args))
        cooperative_sleep.hub = hub
        everyone = getattr(args, "loaded", None)  # (the file's classes, chosen or not: loaded by the command line)
        self.shape = shape_class() if shape_class else None  # environment.shape_class, as in Locust
        self.env = env = Environment(
            hub=hub,
            host=args.host,
            user_classes=classes,
            parsed_options=args,
            shape_class=self.shape,
            available_user_classes={c.__name__: c for c in (everyone[0] if everyone else classes)},
        )
        if gevent_hub.enabled():  # the locustfile's libraries wait on gevent's hub: squall's runs in it
            hub.use_gevent(gevent_hub.bind(hub, env))
        if isinstance(env.runner, WorkerRunner) and os.environ.get(FEED_ENV):
            env.runner.listen_to_master()  # a distributed worker: its master is the driver
        events.user_error.add_listener(_log_task_error)
        # A request the locustfile fires itself (a custom client) is counted, as Locust's stats listen to
        # the event; squall's own clients recorded theirs in the engine and only notify the listeners.
        events.request.recorder = FiredRequests(lambda: hub.engine)
        events.request.on_listen = hub.end_plans  # native users go on in Python, seen by the new listener
        events.init.fire(environment=env, runner=env.runner, web_ui=env.use_dashboard(dashboard, args.web_login))
        self.watchdog = Watchdog(hub)
        self.life = Lifecycle(Interrupt(env, self.watchdog, stop_timeout))
        self.generator = GeneratorWatch()
        self.feed = worker_feed()
        if self.feed is not None and isinstance(env.runner, WorkerRunner):
            self.feed.runner = env.runner
        self.partial: live.PartialFiles | None = None
        self.last: dict[str, Any] | None = None  # the last test's result, once its outputs are written
        self.idle = False  # the run ended while it waited for the page's Start
        self.reason = "interrupted"
        self.result: dict[str, Any] | None = None

    @contextmanager
    def clock(self) -> Iterator[None]:
        """The run's own clock while its tests go (the watchdog, `run_test`), and Locust's listeners of
        the run unhooked after them."""
        previous_alarm = signal.signal(signal.SIGALRM, self.watchdog)
        signal.setitimer(signal.ITIMER_REAL, WATCH_EVERY, WATCH_EVERY)
        try:
            yield
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous_alarm)
            self.unhook()

    def unhook(self) -> None:
        """squall's own listeners of the run off Locust's events, and the hub off gevent's."""
        events.user_error.remove_listener(_log_task_error)
        events.request.recorder = None
        events.request.on_listen = None
        gevent_hub.unbind(self.hub)

    def tests(self, users: int, spawn_rate: float) -> None:
        """The test, or with the dashboard and without --autoquit one test after another, each started
        by the page (Locust's web UI: New), until a signal; each test's outputs are written as it ends,
        but the last's (`end`)."""
        args, dashboard, env, received = self.args, self.dashboard, self.env, self.life.received
        new_tests = dashboard is not None and args.autoquit is None and self.worker is None
        tests = 0
        while True:
            waits = dashboard is not None and (tests > 0 or not args.autostart)
            start = _wait_for_start(dashboard, received, again=tests > 0) if dashboard and waits else {}
            if start is None:
                self.idle = True
                return
            users = start.get("users", users)
            spawn_rate = start.get("spawn_rate", spawn_rate)
            limits.ensure_open_files(max(users, 1))  # the page's users (checked against the limit)
            if start.get("host") and start["host"] != split_userinfo(args.host or "")[0]:  # a new host
                env.host = args.host = start["host"]
            if waits:  # the test starts now: so do its engine's clock, time series and totals
                self._fresh(again=tests > 0)
            tests += 1
            self.reason = self._test(users, spawn_rate)
            runner = env.runner
            if runner.stop_asked and not runner.quitting and dashboard is None and self.shape is None:
                self._idle_after_stop(received)
                return
            # The locustfile's runner.quit() ends the process, as in Locust (a threshold's abort, the
            # page's Stop and the users' own end only end the test).
            watch = args.watch
            quit_by_file = env.runner.quitting and self.reason == "completed" and not (watch and watch.failed)
            if not new_tests or received or quit_by_file:
                return  # its outputs in `end`, once
            assert dashboard is not None
            self.last = last = end_test(env, self.hub, args, self.reason, self.generator, self.target_monitor)
            verdicts = run_output.judge(last, args)
            run_output.print_and_write(last, args, verdicts, *run_output.exit_code(last, args, env))
            if self.partial is not None:
                self.partial.done()
            dashboard.store.finish(last)
            if tests == 1:
                main_logger.info("--autoquit not specified, leaving web ui running indefinitely")
                url = dashboard.url
                sys.stderr.write(f"squall: the test ended; its dashboard stays at {url} (New starts another)\n")

    def _idle_after_stop(self, received: list[int]) -> None:
        """Headless, a test the file's `runner.stop()` ended leaves the run idle until -t (without one,
        until a signal), as Locust's run stays then; its result is the test's, taken now (`end` writes it
        then, after the quitting event)."""
        env = self.env
        self.result = end_test(env, self.hub, self.args, self.reason, self.generator, self.target_monitor)
        started = env.started_at
        deadline = started + self.run_time if self.run_time and started is not None else None
        while not received and (deadline is None or time.monotonic() < deadline):
            real_sleep(0.05)
        if not received:
            main_logger.info("--run-time limit reached, shutting down")

    def _fresh(self, again: bool) -> None:
        """A test the page starts is measured from its Start: a new engine (the one made with the hub only
        served `init`, before any test), and after a test a new watch of the generator and the target."""
        self.hub.use_engine(new_engine(self.args))
        self.env.begin_test()
        self.watchdog.end_by = None
        if self.shape:
            self.shape.reset_time()
        if again:
            self.generator = GeneratorWatch()
            self.target_monitor = monitor.Monitor.from_args(self.args)

    def _test(self, users: int, spawn_rate: float) -> str:
        """One test, to its users' end; returns its stop reason."""
        args, dashboard = self.args, self.dashboard
        load = {"model": "open" if args.rate else "users", "users": users, "spawn_rate": spawn_rate}
        self.partial = self.feed or live.partial_files(
            args.result_json if self.worker is None else None, "http", args.host or "", load
        )
        if dashboard is not None:
            shown_host = split_userinfo(args.host or "")[0]
            dashboard.store.begin_test(host=shown_host, spawn_rate=spawn_rate, state="spawning")
        test = ScriptTest(
            self.env, self.hub, self.classes, self.shape, users, spawn_rate, self.run_time, self.stop_timeout, args,
            dashboard, self.partial, self.generator, self.target_monitor, self.watchdog,
        )  # fmt: skip
        return test.run(self.life)

    def end(self) -> int:
        """The run's end: its last test's result, Locust's quitting event and log, the outputs (a worker
        hands its result on); returns the exit code. Ctrl-C while the page waited for the next test ends
        as Locust's web UI ends (the last test's outputs are written already)."""
        args, env, received = self.args, self.env, self.life.received
        if self.idle and self.last is not None:
            events.quitting.fire(environment=env, reverse=True)  # as Locust: last added first
            code, _why = run_output.exit_code(self.last, args, env)
            main_logger.info(f"Shutting down (exit code {code})")
            return code
        if received:
            self.reason = "interrupted"
            if signal.SIGTERM in received:
                main_logger.info("Got SIGTERM signal")
        result = self.result  # (taken at the test's end when `runner.stop()` left the run idle)
        if result is None:
            result = end_test(env, self.hub, args, self.reason, self.generator, self.target_monitor)
        self.result = result
        verdicts = run_output.judge(result, args) if self.worker is None else []
        events.quitting.fire(environment=env, reverse=True)  # as Locust: last added first
        code, why = run_output.exit_code(result, args, env, received)
        if self.worker is None:  # (a --processes worker's code is its driver's to say)
            main_logger.info(f"Shutting down (exit code {code})")
        if self.worker is not None:
            processes.write_result(result)
        else:
            run_output.print_and_write(result, args, verdicts, code, why)
        if self.partial is not None:
            self.partial.done()
        return code

    def serve_the_end(self) -> None:
        """The dashboard after the run: it shows the result until --autoquit or Ctrl-C (gone at once
        after a Ctrl-C that ended the page's waiting for a test)."""
        dashboard, args, received = self.dashboard, self.args, self.life.received
        if dashboard is None:
            return
        if self.result is None:
            dashboard.stop()
            return
        waits = not received and (args.autoquit is None or args.autoquit < 0)
        if waits:
            main_logger.info("--autoquit not specified, leaving web ui running indefinitely")
        live.serve_the_end(dashboard, self.result, args.autoquit, self.life.signum)
        if not received and not waits:
            main_logger.info("--autoquit time reached, shutting down")


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
    hostless = [] if args.host else [c.__name__ for c in classes if issubclass(c, SessionUser) and not c.host]
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

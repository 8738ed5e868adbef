"""`squall -f locustfile.py` (or `squall run -f ...`): runs a locustfile unchanged. Users are greenlets
on the hub; every request runs in the engine. Output is Locust's: the stats table every 2 s, the
final tables, the error report, the CSV files, `--json`/`--json-file` in Locust's JSON, and Locust's
log lines on stderr (`squall.log`); squall's full result goes to `--result-json`.

A task that holds the interpreter (Python code that never requests, waits or sleeps) cannot be
switched away from, so the run's own clock is a SIGALRM timer every 0.1 s (`_Watchdog`): past the
end of the run (`-t`, or a stop signal, plus `--stop-timeout`) it ends such a task by raising
GreenletExit into it, as Locust's end of run kills its users, and a task held for HANG_LIMIT is
ended with UserHung at any time."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
import time
from typing import TYPE_CHECKING, Any, Callable, SupportsIndex, TypeVar

from greenlet import GreenletExit, getcurrent

from squall import (
    __version__,
    _engine,
    distributed,
    exitcodes,
    load_values,
    locust_compat,
    monitor,
    otel,
    outputs,
    processes,
    start_up,
    thresholds,
)
from squall import locustfile as locustfiles
from squall.clients import split_userinfo
from squall.commands import run_checks, run_limit
from squall.commands.drive import observe, print_observations
from squall.distributed.feed import FEED_ENV, WorkerFeed, wait_for_start, worker_feed
from squall.durations import parse_duration
from squall.env import Environment
from squall.errors import UsageError
from squall.event import events
from squall.exception import UserHung, user_traceback
from squall.gevent_compat import runs as gevent_runs
from squall.locustfile import ScriptError
from squall.log import main_logger, runners_logger, setup_logging, task_logger, user_classes_count
from squall.monitor import GeneratorWatch
from squall.options.run_arguments import add_arguments, check_unsupported, locust_aliases
from squall.report import locust_console, locust_errors, locust_json
from squall.runners import WorkerRunner
from squall.runtime import gevent_hub, limits
from squall.runtime.follow import Follower
from squall.runtime.hub import Hub
from squall.runtime.open_model import OpenPool
from squall.runtime.signals import deferred, on_stop_signals
from squall.runtime.spawner import Spawner
from squall.shape import LoadTestShape
from squall.stats import FiredRequests
from squall.user.inspectuser import get_ratio, task_ratio_json, task_ratio_text
from squall.user.task import filter_tasks_by_tags
from squall.user.users import HttpUser, User
from squall.web import live, page

if TYPE_CHECKING:
    from types import FrameType

    from squall.runtime.follow import Why
    from squall.web.server import Dashboard, LiveStore

    # (when, {(method, name): (requests, failures)}) at the last live table, for the recent rates.
    LiveCounts = tuple[float, dict[tuple[str, str], tuple[int, int]]]

Number = TypeVar("Number", int, float)

STATS_INTERVAL = 2.0
# A task holding the hub this long without a request, wait or sleep stops every other user: it is ended.
HANG_LIMIT = 10.0
# The watchdog's period: the end of a run and a stop signal take effect within this (plus END_HOLD).
WATCH_EVERY = 0.1
# Past the end of the run, a task that has held the hub this long is ended: long enough that an on_stop
# doing ordinary work is never cut, short enough that a spinning task ends within 0.5 s of the end.
END_HOLD = 0.2
# While the run waits for its users to end (their task at --stop-timeout, their on_stop once killed), it
# looks this often whether they have: each stop waited a whole 0.1 s before, when the users had ended
# in the first pass. With `Hub.serve` leaving at once when unbound (another 0.1 s), a 2-user run went
# from 0.21 s between the end of its time and its exit to 0.02.
STOP_POLL_S = 0.01

__all__ = ["ScriptError", "add_arguments", "load_locustfile", "run"]


_real_sleep = time.sleep


class _CooperativeSleep:
    """`time.sleep` while squall runs a locustfile: in a user (or, without gevent, any greenlet but the
    hub's) it waits on the hub's timers, so the other users go on (as Locust's gevent patching does);
    elsewhere gevent's sleep where gevent patched the standard library, else the standard library's.
    With gevent, only users sleep on the hub's timers, which stop with the run (`gevent_hub.unbind`): a
    greenlet that outlives it (a thread of a library or of the file, as a gRPC server's thread pool that
    an init listener started, or one a listener spawned) sleeps on gevent's, which go on after it. On
    squall's, it slept for ever once the run ended, and the interpreter's exit joined it for ever."""

    hub: Hub | None = None  # the hub of the run, once it starts
    thread = threading.get_native_id()  # the hub's OS thread

    def __call__(self, seconds: float | SupportsIndex) -> None:
        hub = self.hub
        g = getcurrent()
        if (
            hub is not None
            and g is not hub.main
            and (getattr(g, "squall_user", False) if gevent_hub.enabled() else True)
            and threading.get_native_id() == self.thread
        ):
            hub.sleep(float(seconds))
        elif gevent_hub.enabled() and (hub is None or g is not hub.main):
            gevent_hub.sleep(float(seconds))
        else:
            _real_sleep(seconds)


cooperative_sleep = _CooperativeSleep()


def load_locustfile(spec: str, users_here: bool = True) -> tuple[list[type[User]], type[LoadTestShape] | None]:
    """Imports the locustfiles of `-f` with `locust` resolving to squall, after gevent's patching where
    this process runs the users (`users_here`); returns (User classes, shape class or None). ScriptError
    when they cannot load."""
    locust_compat.install(gevent=users_here)
    time.sleep = cooperative_sleep
    start_up.resume()  # the file's code is the user's: its garbage is collected as ever
    return locustfiles.load(spec)


class _Watchdog:
    """The SIGALRM handler of a run (see the module's docstring). `end_by` is the monotonic time past
    which no task may keep the hub; None while the run goes on."""

    def __init__(self, hub: Hub) -> None:
        self.hub = hub
        self.end_by: float | None = None

    def end(self, at: float) -> None:
        self.end_by = at if self.end_by is None else min(self.end_by, at)

    def check(self) -> None:
        """Raises into the task running now if it must end (called from signal handlers)."""
        held = self.hub.running_for()
        if held <= 0 or getcurrent() in (self.hub.main, self.hub.driver):
            return
        if self.end_by is not None and time.monotonic() >= self.end_by and held >= END_HOLD:
            raise GreenletExit()  # the user ends as at the end of a run: its on_stop runs
        if held > HANG_LIMIT:
            raise UserHung(f"a task ran {held:.0f} s without yielding (no request, wait or sleep)")

    def __call__(self, _signum: int, _frame: FrameType | None) -> None:
        self.check()


def _number(text: str, what: str, cast: Callable[[str], Number], minimum: float = 0) -> Number:
    """-u and -r as the dashboard's Start and Edit read them too (squall.load_values: finite, at least `minimum`)."""
    return load_values.number(text, what, cast, minimum)


def run(args: argparse.Namespace) -> int:
    locust_aliases(args)
    parser = getattr(args, "parser", None)
    if parser is not None and (code := check_unsupported(args, parser)) is not None:
        return code
    users_given = args.users is not None
    users = _number(args.users if users_given else "1", "number of users", int)
    spawn_rate = _number(args.spawn_rate, "spawn rate", float, 0.001)
    try:
        run_time = parse_duration(args.run_time) if args.run_time else None
        stop_timeout = parse_duration(args.stop_timeout) if args.stop_timeout not in ("0", "0s") else 0.0
    except ValueError as e:
        raise UsageError(str(e)) from None
    # Locust's types in the parsed options a locustfile reads (`environment.parsed_options`).
    args.num_users, args.spawn_rate, args.run_time = users, spawn_rate, _whole(run_time)
    args.stop_timeout = stop_timeout
    classes, shape_class = args.loaded  # loaded by the command line, before its final parse
    worker = processes.worker()
    node_role = distributed.role(args) if worker is None else None  # Locust's --master / --worker (on Ray)
    if node_role == "worker":  # its engines run the master's locustfile, not this one
        from squall.distributed import roles  # (start-up: a run that is not distributed never loads it)

        return roles.run_worker(args)
    if args.locustfile == "-":
        raise UsageError("-f - is for --worker: the master sends its locustfile")
    if args.list:
        print("\n".join(c.__name__ for c in classes))
        return exitcodes.OK
    classes, taskless = _select_classes(classes, args)
    if args.show_task_ratio or args.show_task_ratio_json:  # Locust prints one of them and exits
        show = task_ratio_text if args.show_task_ratio else task_ratio_json
        sys.stdout.write(show(classes, users if users_given else None))
        return exitcodes.OK
    dashboard_start = not args.headless and not args.autostart and worker is None and node_role is None
    run_checks.check(classes, args.host, users, shape_class, host_from_page=dashboard_start)
    if worker is None:
        html = args.html and _html_path(args)
        outputs.check_writable(result_json=args.result_json, csv=args.csv and args.csv + "_stats.csv", html=html)
    if args.find_limit and worker is None:
        return run_limit.find_limit(args, _final_output)
    args.thresholds, args.watch = thresholds.from_args(args)
    target_monitor = monitor.Monitor.from_args(args) if worker is None else None
    distributed.check(args)
    if distributed.requested(args) or node_role == "master":
        if not args.headless:
            sys.stderr.write("squall: the dashboard does not follow distributed runs yet; running headless\n")
        from squall.distributed.runs import run_locustfile  # (start-up: as roles above)

        return run_locustfile(args, users, _final_output, classes, shape_class)
    if worker is None and args.processes != 1:
        if not args.headless:
            sys.stderr.write("squall: the dashboard does not follow --processes runs yet; running headless\n")
        return processes.run_processes(args, users, _final_output, signal_codes=False)  # Locust's code
    if worker is not None:
        users, spawn_rate = processes.share(users, worker), spawn_rate / worker[1]
    _start_logging(args, classes, shape_class, users_given)
    for name in taskless:  # Locust's warning; the class still runs (its users' turns are errors)
        logging.warning(f"{name} had no tasks left after filtering, instantiating it will fail!")
    return _run_here(args, classes, shape_class, users, spawn_rate, run_time, stop_timeout, target_monitor)


def _whole(seconds: float | None) -> int | float | None:
    """A duration as Locust's options hold it: whole seconds as an int."""
    return int(seconds) if seconds is not None and float(seconds).is_integer() else seconds


def _select_classes(classes: list[type[User]], args: argparse.Namespace) -> tuple[list[type[User]], list[str]]:
    """The User classes named on the command line (all by default), with `--config-users`,
    `--equal-weights`, `-T` and `-E` applied as Locust applies them; and the names of the classes and
    TaskSets left without tasks (Locust warns of them, and runs them)."""
    by_name = {c.__name__: c for c in classes}
    if args.user_classes:
        unknown = [n for n in args.user_classes if n not in by_name]
        if unknown:
            raise UsageError(
                f"unknown User class {', '.join(unknown)} (the locustfile has: {', '.join(by_name) or 'none'})"
            )
        classes = [by_name[n] for n in args.user_classes]
    if not classes:
        raise UsageError(f"{args.locustfile}: no User class with tasks found")
    for settings in (s for group in args.config_users or [] for s in group):
        _update_user_class(by_name, settings)
    if args.equal_weights:
        for c in classes:
            c.weight = 1
            _equal_tasks(c)
    emptied: list[str] = []
    for c in classes:
        filter_tasks_by_tags(c, args.tags, args.exclude_tags, emptied=emptied)
    return classes, emptied


def _update_user_class(by_name: dict[str, type[User]], settings: dict[str, Any]) -> None:
    """One `--config-users` entry: its attributes set on the class; `tasks` keeps the tasks of those
    names (Locust's `Environment.update_user_class`)."""
    name = settings["user_class_name"]
    if name not in by_name:
        raise UsageError(f"--config-users: unknown User class {name} (the locustfile has: {', '.join(by_name)})")
    cls = by_name[name]
    for key, value in settings.items():
        if key == "tasks":
            cls.tasks = [t for t in cls.tasks if getattr(t, "__name__", None) in value]
        elif key != "user_class_name":
            setattr(cls, key, value)


def _equal_tasks(holder: Any) -> None:
    """`--equal-weights`: each task of the class (and of its TaskSets) once, so all weigh the same."""
    distinct: list[Any] = []
    for t in holder.tasks:
        if t not in distinct:
            distinct.append(t)
        if isinstance(t, type) and getattr(t, "tasks", None):
            _equal_tasks(t)
    holder.tasks = distinct


def _start_logging(
    args: argparse.Namespace, classes: list[type[User]], shape: type[LoadTestShape] | None, users_given: bool
) -> None:
    """Locust's logging and its first lines (`locust.main`'s, before the run)."""
    if not args.skip_log_setup:
        try:
            setup_logging(args.loglevel, args.logfile)
        except (OSError, ValueError) as e:
            raise UsageError(f"cannot log to {args.logfile or 'stderr'}: {e}") from None
    # --otel: the run's metrics and log over OpenTelemetry (squall.otel), as Locust's start says so
    exporting = bool(args.otel) and otel.setup(args, processes.worker())
    started = ", OpenTelemetry enabled" if exporting else ""
    main_logger.info(f"Starting squall {__version__} (Locust-compatible){started}")
    if not shape:
        fixed = sum(c.fixed_count for c in classes)
        if fixed > args.num_users:
            main_logger.info(
                f"Total fixed_count of User classes ({fixed}) is greater than the specified number of users "
                f"({args.num_users}), so not all will be spawned."
            )
    elif not getattr(shape, "use_common_options", False) and (users_given or args.run_time or args.spawn_rate != 1):
        main_logger.warning(
            "--run-time, --users or --spawn-rate have no impact on LoadShapes unless the shape class explicitly "
            "reads them. See: docs.locust.io/en/stable/custom-load-shape.html#use-common-options"
        )
        given = {"--users": users_given, "--spawn-rate": args.spawn_rate != 1, "--run-time": bool(args.run_time)}
        main_logger.warning(f"The following option(s) will be ignored: {', '.join(o for o, g in given.items() if g)}")
    if args.spawn_rate > 100:
        runners_logger.warning(
            "Your selected spawn rate is very high (>100), and this is known to sometimes cause issues. "
            "Do you really need to ramp up that fast?"
        )


def _log_task_error(user_instance: Any = None, exception: BaseException | None = None, **_kw: Any) -> None:
    """An exception in a task, logged as Locust's task runner logs it."""
    if exception is not None:
        task_logger.error("%s\n%s", exception, user_traceback(exception))


def _run_here(
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
    hub = Hub(_new_engine(args))
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

    received: list[int] = []
    watchdog = _Watchdog(hub)

    def on_signal(signum: int) -> None:
        received.append(signum)
        env.runner.quit()
        watchdog.end(time.monotonic() + stop_timeout)
        watchdog.check()  # a task holding the hub ends now, not when it yields

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
            with on_stop_signals(on_signal):
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
                        hub.use_engine(_new_engine(args))
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
                    reason = _drive(
                        env, hub, classes, shape, users, spawn_rate, run_time, stop_timeout, args, dashboard, partial,
                        generator, target_monitor, watchdog,
                    )  # fmt: skip
                    # The locustfile's runner.quit() ends the process, as in Locust (a threshold's abort, the
                    # page's Stop and the users' own end only end the test).
                    watch = args.watch
                    quit_by_file = env.runner.quitting and reason == "completed" and not (watch and watch.failed)
                    if not new_tests or received or quit_by_file:
                        break  # the outputs below, once
                    assert dashboard is not None
                    last = _end_test(env, hub, args, reason, generator, target_monitor)
                    verdicts = _judge(last, args)
                    _print_and_write(last, args, verdicts, *_exit_code(last, args, env))
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
            code, _why = _exit_code(last, args, env)
            main_logger.info(f"Shutting down (exit code {code})")
            events.quit.fire(exit_code=code)
            dashboard.stop()
            return code
        if received:
            reason = "interrupted"
            if signal.SIGTERM in received:
                main_logger.info("Got SIGTERM signal")
        result = _end_test(env, hub, args, reason, generator, target_monitor)
        verdicts = _judge(result, args) if worker is None else []
        events.quitting.fire(environment=env, reason=reason)
        code, why = _exit_code(result, args, env, received)
        main_logger.info(f"Shutting down (exit code {code})")
        if worker is not None:
            processes.write_result(result)
        else:
            _print_and_write(result, args, verdicts, code, why)
        if partial is not None:
            partial.done()
    events.quit.fire(exit_code=code)
    if dashboard is not None:
        waits = not received and (args.autoquit is None or args.autoquit < 0)
        if waits:
            main_logger.info("--autoquit not specified, leaving web ui running indefinitely")
        live.serve_the_end(dashboard, result, args.autoquit, received[0] if received else None)
        if not received and not waits:
            main_logger.info("--autoquit time reached, shutting down")
    return code


def _new_engine(args: argparse.Namespace) -> _engine.ScriptEngine:
    return _engine.ScriptEngine(insecure=args.insecure, http2=args.http2)


def _end_test(
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


def _exit_code(
    result: dict[str, Any], args: argparse.Namespace, env: Environment | None = None, received: list[int] | None = None
) -> tuple[int, str]:
    """The run's exit code and why, as Locust decides it: `environment.process_exit_code`, a failed
    threshold, then --exit-code-on-error when requests failed or tasks raised. A stop signal (Ctrl-C,
    SIGTERM) does not change it, as in Locust: scripts and CI written for Locust read Locust's code
    (`squall bench` and `squall mqtt` exit 130 or 143). `received` only says why in the verdict."""
    stopped = f"; {exitcodes.stopped_why(received[0])}" if received else ""
    if env is not None and env.process_exit_code is not None:
        return env.process_exit_code, "set by the locustfile (environment.process_exit_code)" + stopped
    if any(not t["passed"] for t in result.get("thresholds", [])):
        return exitcodes.THRESHOLDS, "a threshold failed" + stopped
    failures, exceptions = result["aggregate"]["failures"], sum(x["count"] for x in result["exceptions"])
    if failures or exceptions:
        code: int = args.exit_code_on_error
        what = [f"{failures:,} requests failed"] if failures else []
        what += [f"{exceptions:,} task exceptions"] if exceptions else []
        return code, f"{' and '.join(what)} (--exit-code-on-error {code})" + stopped
    return exitcodes.OK, stopped[2:]


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
    shown = argparse.Namespace(**{**vars(args), "argv": _redact_secrets(args)})  # the page shows the command line
    dashboard = live.start(shown, "run", "http", args.host or "", controls=controls, form=form, load=load)
    # The page's Start gets the command line's checks (its users and host, for these User classes).
    dashboard.check_start = lambda u, host: run_checks.check(classes, host or args.host, u, shape_class, False)
    dashboard.store.meta["title"] = f"squall: {os.path.basename(args.locustfile)}"
    url = args.web_host_display_name or dashboard.url.rstrip("/")
    main_logger.info(f"Starting web interface at {url}, press enter to open your default browser.")
    return dashboard


def _redact_secrets(args: argparse.Namespace) -> list[str]:
    """The command line as typed (`squall -f ...`, not the `run` squall reads it as), with the values of
    options declared `is_secret=True` hidden (`***`)."""
    parser = getattr(args, "parser", None)
    argv: list[str] = list(getattr(args, "typed_argv", None) or getattr(args, "argv", None) or [])
    if parser is None:
        return argv
    secret = {o for a in parser._actions if getattr(a, "is_secret", False) for o in a.option_strings}
    out: list[str] = []
    hide_next = False
    for a in argv:
        option, eq, _value = a.partition("=")
        if hide_next:
            out.append("***")
            hide_next = False
        elif option in secret and eq:
            out.append(f"{option}=***")
        else:
            out.append(a)
            hide_next = a in secret
    return out


def _drive(
    env: Environment,
    hub: Hub,
    classes: list[type[User]],
    shape: LoadTestShape | None,
    users: int,
    spawn_rate: float,
    run_time: float | None,
    stop_timeout: float,
    args: argparse.Namespace,
    dashboard: Dashboard | None = None,
    partial: live.PartialFiles | None = None,
    generator: GeneratorWatch | None = None,
    target_monitor: monitor.Monitor | None = None,
    watchdog: _Watchdog | None = None,
) -> str:
    """The test itself: spawning, shape ticks, periodic stats, the dashboard, the end; returns the stop
    reason."""
    runner = env.runner
    gevent_runs.bind(env)  # squall's gevent: the run's exceptions and hub for the locustfile's greenlets
    spawner = Spawner(env, classes)
    log = _RunLog(args, spawner, shape is not None)
    worker = processes.worker()
    share = worker[1] if worker else 1  # this process's part of a rate

    def open_model(rate: float, duration: float | None = None) -> None:
        """From now on, task iterations arrive at `rate` a second (the open model), for `duration`."""
        if env.open_pool is None:
            env.open_pool = OpenPool(env, spawner, users)
            hub.on_arrivals = env.open_pool.dispatch
            spawner.set_target(0, spawn_rate)
        hub.engine.set_rate(rate / share, args.arrival, duration)

    def shape_tick() -> bool:
        """The shape's next tick applied; False when it returns None (the test is over)."""
        assert shape is not None
        tick = shape.tick()
        if tick is None:
            return False
        if isinstance(tick, dict):  # {"rate": R}: the open model at R iterations a second
            open_model(float(tick["rate"]))
        else:
            log.shape_tick(tick)
            rate = tick[1] / share
            spawner.set_target(processes.share(int(tick[0]), worker), rate, tick[2] if len(tick) > 2 else None)
        return True

    store = dashboard.store if dashboard else None
    if isinstance(partial, WorkerFeed):  # its driver merges the histograms, exactly (and warns of many names)
        publisher = live.Publisher(
            lambda cursor: hub.engine.live(cursor, histograms=True),
            store,
            partial,
            generator,
            target_monitor,
            names_warning=False,
        )
    elif store is not None:  # the page shows the failures in Locust's words, as the files will
        fast = locust_errors.fast_http(classes)

        def read(cursor: int) -> dict[str, Any]:
            now: dict[str, Any] = hub.engine.live(cursor)
            locust_errors.annotate(now["totals"]["errors"], fast)
            return now

        publisher = live.Publisher(read, store, partial, generator, target_monitor)
    else:  # a --processes worker leaves the warning of many names to the process that shows the run
        publisher = live.Publisher(
            hub.engine.live, store, partial, generator, target_monitor, names_warning=worker is None
        )
    controls = _ScriptControls(env, spawner, log, shape is not None, store, worker)
    follower = Follower(controls, publisher, dashboard, args.watch)

    def fields() -> dict[str, Any]:
        """What the page shows beside the engine's stream, read once a second."""
        out: dict[str, Any] = {
            "users": runner.user_count,
            "target_users": None if env.open_pool else spawner.target,
            "state": runner.state,
            "exceptions": [dict(x, nodes="local") for x in env.exceptions.values()],
        }
        if store is not None:  # Locust's "Current ratio": the tasks of the users running now
            counts = runner.user_classes_count
            out["tasks"] = {"per_class": get_ratio(classes, counts, False), "total": get_ratio(classes, counts, True)}
        return out

    # As in Locust, -t does not end a shape's test (a shape that wants it reads it: use_common_options).
    log.starting(None if shape else run_time)
    if args.rate:
        open_model(args.rate, run_time)  # exactly rate x run time arrivals
        runner.target_user_count = users
    elif not shape:
        spawner.set_target(users, spawn_rate)
    start = follower.begin()  # the target's monitor and the page's clock from now
    env.started_at = start
    deadline = start + run_time if run_time and not shape else None
    # Locust ticks the shape first, then fires test_start: its listeners see the first tick's users.
    shaped = shape is None or shape_tick()
    if watchdog is not None and deadline is not None:
        watchdog.end(deadline + stop_timeout)  # a task still holding the hub then is ended
    # Locust's order: test_start sees the runner ready, spawning_complete sees it spawning (its own
    # listener, registered after the locustfile's, then marks it running and resets the stats).
    events.test_start.fire(environment=env)
    runner.state = "spawning"
    if not args.rate and not shape:
        log.ramping(users, spawn_rate)  # after test_start, as Locust's runner logs it
    next_stats = start + STATS_INTERVAL
    next_tick = start + 1.0
    last_counts: LiveCounts = (start, {})
    reason = "completed"
    while True:
        now = time.monotonic()
        hub.engine.set_users(runner.user_count)
        if isinstance(runner, WorkerRunner):
            runner.deliver()  # the master's messages
        if runner.quitting:  # runner.quit() from the script, the page's Stop, or a signal (marked after)
            reason = "interrupted" if controls.stopped_by_hand else reason
            break
        if deadline is not None and now >= deadline:
            reason = "duration"
            log.run_time_reached()
            break
        if spawner.done() and not shape:
            break  # every user stopped by itself: nothing is left to run
        if shape and (not shaped or now >= next_tick):
            next_tick = now + 1.0
            if not shaped or not shape_tick():
                log.shape_done()
                break
        if env.open_pool is None:
            spawner.step()
        if (env.open_pool or len(spawner.spawned) >= spawner.target) and runner.state == "spawning":
            if env.open_pool is None:
                log.spawned()
            events.spawning_complete.fire(user_count=runner.user_count)
            runner.state = "running"
            if args.reset_stats:
                runners_logger.info("Resetting stats\n")
                env.stats.reset_all()
        if now >= next_stats and not args.only_summary and (args.print_stats or args.headless):
            next_stats = now + STATS_INTERVAL
            last_counts = _print_live(hub.engine, last_counts)
        follower.tick(fields)  # the page's commands; once a second the run so far, and the thresholds
        hub.run_until(min(t for t in (now + 0.1, deadline) if t is not None))
    if watchdog is not None:  # from now on no task may hold the hub past --stop-timeout
        watchdog.end(time.monotonic() + stop_timeout)
    spawner.halt()  # no user starts after the end
    events.test_stopping.fire(environment=env)  # with the runner's state as it was, as in Locust
    runner.state = "cleanup"
    follower.end(state="stopping")
    if env.open_pool is not None and not runner.quitting:
        # No more arrivals; the iterations running, and those waiting for a user, may finish (up to a
        # grace); what still waits then was never started: dropped.
        hub.engine.set_rate(0.0, args.arrival)
        pool = env.open_pool
        hub.run_while(lambda: not pool.all_idle(), time.monotonic() + max(stop_timeout, 10.0), 0.05)
    if stop_timeout > 0:  # users finish the task they are in, up to --stop-timeout
        runner.stopping = True
        hub.end_plans()  # native users too: each at its next wait
        hub.run_while(lambda: bool(runner.users), time.monotonic() + stop_timeout, STOP_POLL_S)
    for g in list(runner.users.values()):
        hub.kill(g)
    gevent_runs.kill_user_greenlets()  # the greenlets users spawned (gevent.spawn, pools) end with them
    spawned = gevent_hub.kill_user_spawned() if gevent_hub.enabled() else []  # the same with real gevent
    grace_end = time.monotonic() + max(stop_timeout, 10.0)
    hub.run_while(lambda: bool(runner.users) or any(not g.dead for g in spawned), grace_end, STOP_POLL_S)
    gevent_runs.finish_user_greenlets(hub, grace_end)  # and those their on_stop spawned
    runner.state = "stopped"
    events.test_stop.fire(environment=env)
    return reason


class _ScriptControls:
    """The page's commands to a locustfile's run: Stop, as Ctrl-C stops a headless run; Reset, as
    Locust's web UI (the event, the stats, the exceptions); a new user count, this process's share of
    it, unless a shape or the open model (--rate) sets the users."""

    def __init__(
        self,
        env: Environment,
        spawner: Spawner,
        log: _RunLog,
        shaped: bool,
        store: LiveStore | None,
        worker: tuple[int, int] | None,
    ) -> None:
        self.env = env
        self.spawner = spawner
        self.log = log
        self.shaped = shaped
        self.store = store
        self.worker = worker  # (index, count) among --processes' workers, as _drive read it; None: alone
        self.stopped_by_hand = False  # the run's stop reason: interrupted

    def stop(self, why: Why) -> None:
        self.stopped_by_hand = self.stopped_by_hand or why == "page"
        self.env.runner.quit()

    def reset(self) -> None:
        events.reset_stats.fire()
        self.env.stats.reset_all()
        self.env.exceptions.clear()

    def set_users(self, users: int, spawn_rate: float) -> None:
        if self.shaped or self.env.open_pool is not None:
            return
        share = self.worker[1] if self.worker else 1
        mine = processes.share(users, self.worker)
        limits.ensure_open_files(max(mine, 1))  # checked against the limit by the server
        self.log.ramping(mine, spawn_rate / share)
        self.spawner.set_target(mine, spawn_rate / share)
        if self.store is not None:
            self.store.set(spawn_rate=spawn_rate)
        self.env.runner.state = "spawning"


class _RunLog:
    """Locust's log lines of a run's life (`locust.main`'s and `locust.runners`'), at the points of the
    run where Locust logs them, with its texts."""

    def __init__(self, args: argparse.Namespace, spawner: Spawner, shaped: bool) -> None:
        self.args = args
        self.spawner = spawner
        self.shaped = shaped
        self.last_tick: Any = None

    @property
    def dashboard_run(self) -> bool:
        return not self.args.headless and bool(self.args.autostart)

    def starting(self, run_time: float | None) -> None:
        if self.shaped:
            runners_logger.info("Shape test starting.")
            runners_logger.info("Shape worker starting")
        if run_time:
            main_logger.info(f"Run time limit set to {_whole(run_time)} seconds")
        elif not self.shaped:
            main_logger.info("No run time limit set, use CTRL+C to interrupt")

    def ramping(self, users: int, rate: float) -> None:
        runners_logger.info(f"Ramping to {users:d} users at a rate of {rate:.2f} per second")

    def spawned(self) -> None:
        counts = {c.__name__: n for c, n in self.spawner.counts.items()}
        runners_logger.info(f"All users spawned: {user_classes_count(counts)}")

    def shape_tick(self, tick: Any) -> None:
        if tick != self.last_tick:
            self.last_tick = tick
            runners_logger.info(f"Shape test updating to {int(tick[0]):d} users at {float(tick[1]):.2f} spawn rate")
            self.ramping(int(tick[0]), float(tick[1]))

    def shape_done(self) -> None:
        runners_logger.info("Shape test stopping")
        self._stopping("Shape test completed")

    def run_time_reached(self) -> None:
        self._stopping("--run-time limit reached")

    def _stopping(self, reason: str) -> None:
        main_logger.info(f"{reason}, stopping test" if self.dashboard_run else f"{reason}, shutting down")


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
        _real_sleep(0.05)
    dashboard.store.set(startable=False)
    return None


def _print_live(engine: _engine.ScriptEngine, last: LiveCounts) -> LiveCounts:
    """The stats table with the recent rate (since the last table), as Locust prints every 2 s."""
    totals = engine.live(1 << 62)["totals"]  # the totals only: a cursor past every second
    rows = [*totals["endpoints"], totals["aggregate"]]
    now = time.monotonic()
    t0, before = last
    dt = max(now - t0, 1e-9)
    rates: dict[tuple[str, str], tuple[float, float]] = {}
    counts: dict[tuple[str, str], tuple[int, int]] = {}
    for r in rows:
        key = (r["method"], r["name"])
        counts[key] = (r["requests"], r["failures"])
        n0, f0 = before.get(key, (0, 0))
        rates[key] = ((r["requests"] - n0) / dt, (r["failures"] - f0) / dt)
    endpoints, aggregate = rows[:-1], rows[-1]
    sys.stderr.write(locust_console.stats_table(endpoints, aggregate, 0.0, rates) + "\n")
    sys.stderr.flush()
    return now, counts


def _html_path(args: argparse.Namespace) -> str:
    """--html with Locust's {u}, {r} and {t} replaced (users, spawn rate, run time in seconds; a whole
    number without its '.0'; a tag whose value is not set stays, as in Locust)."""
    html: str = args.html
    values = {"{u}": getattr(args, "num_users", None), "{r}": args.spawn_rate, "{t}": args.run_time}
    for tag, value in values.items():
        if value is not None:
            number = float(value)
            html = html.replace(tag, str(int(number)) if number.is_integer() else str(value))
    return html


def _final_output(result: dict[str, Any], args: argparse.Namespace) -> None:
    """The verdicts, then the tables and files (for the runs of other processes: --processes and
    --find-limit)."""
    verdicts = _judge(result, args)
    _print_and_write(result, args, verdicts, *_exit_code(result, args))


def _judge(result: dict[str, Any], args: argparse.Namespace) -> list[thresholds.Verdict]:
    """The thresholds' verdicts, into the result (its files carry them)."""
    return thresholds.judge(result, getattr(args, "thresholds", None) or [], getattr(args, "watch", None))


def _in_flight(n: int) -> str:
    """The end's cancelled requests, counted in words that agree with the count."""
    noun, verb = ("request", "was") if n == 1 else ("requests", "were")
    return f"{n:,} {noun} in flight when their users stopped {verb} cancelled"


def _print_and_write(
    result: dict[str, Any], args: argparse.Namespace, verdicts: list[thresholds.Verdict], code: int, why: str
) -> None:
    """As Locust at its end: the tables on stderr (Locust logs them there: its stats logger is a
    StreamHandler), unless `--json-file` is given; `--json` prints Locust's JSON on stdout, its only
    output, and `--json-file` writes it; then squall's files, its observations and the verdicts with
    the exit code (stderr too)."""
    if not os.environ.get(FEED_ENV):  # (a distributed worker's driver warns)
        live.warn_of_many_names(len(result["endpoints"]))  # a run too short to have warned yet: above its tables
    side = sys.stderr
    if args.json:
        sys.stdout.write(locust_json.dumps(result) + "\n")
        sys.stdout.flush()
    if not args.json_file:
        side.write(locust_console.stats_table(result["endpoints"], result["aggregate"], result["duration_s"]))
        side.write("\n" + locust_console.percentiles_table(result["endpoints"], result["aggregate"]))
        side.write("\n" + locust_console.error_report(result["errors"], script=True))
        if result["exceptions"]:
            side.write("\n" + locust_console.exceptions_report(result["exceptions"]))
    side.flush()
    if result["abandoned"]:
        sys.stderr.write(f"squall: {_in_flight(result['abandoned'])}; not in the stats\n")
    written = []
    if args.json_file:
        try:
            written.append(locust_json.write(result, args.json_file))
        except OSError as e:
            sys.stderr.write(
                f"squall: error: cannot write {locust_json.file_path(args.json_file)}: {e.strerror or e}\n"
            )
    command_meta = page.meta("run", _redact_secrets(args), args.host or "")
    command_meta["title"] = f"squall: {os.path.basename(args.locustfile)}"
    written += outputs.write_files(
        result,
        json_path=args.result_json,
        csv_prefix=args.csv,
        full_history=args.csv_full_history,
        html_path=_html_path(args) if args.html else None,
        html_meta=command_meta,
    )
    print_observations(result, side)
    thresholds.say(verdicts, code, why, side)
    for path in written:
        sys.stderr.write(f"wrote {path}\n")

"""`squall -f locustfile.py` (or `squall run -f ...`): runs a locustfile unchanged. Users are greenlets
on the hub; every request runs in the engine. Output is Locust's: the stats table every 2 s, the
final tables, the error report, and the four CSV files."""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import signal
import sys
import time
import traceback
from typing import TYPE_CHECKING, Any, Callable, SupportsIndex, TypeVar

from greenlet import getcurrent

from squall import _engine, exitcodes, limit, limits, locust_compat, monitor, processes, report, thresholds
from squall.clients import split_userinfo
from squall.commands import run_limit
from squall.commands.arguments import add_threshold_arguments, to_rate
from squall.commands.drive import observe, print_observations
from squall.durations import parse_duration
from squall.env import Environment
from squall.errors import UsageError
from squall.event import events
from squall.exception import UserHung
from squall.hub import Hub
from squall.monitor import GeneratorWatch
from squall.open_model import OpenPool
from squall.report import locust_console
from squall.shape import LoadTestShape
from squall.signals import on_stop_signals
from squall.spawner import Spawner
from squall.user.task import filter_tasks_by_tags
from squall.user.users import User
from squall.web import live, page

if TYPE_CHECKING:
    from types import FrameType

    from squall.web.server import Dashboard

    # (when, {(method, name): (requests, failures)}) at the last live table, for the recent rates.
    LiveCounts = tuple[float, dict[tuple[str, str], tuple[int, int]]]

Number = TypeVar("Number", int, float)

STATS_INTERVAL = 2.0
# A task holding the hub this long without a request, wait or sleep stops every other user: it is ended.
HANG_LIMIT = 10.0


class ScriptError(Exception):
    """The locustfile cannot run: reported as `file:line: message`, exit code 2."""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("-f", "--locustfile", default="locustfile.py", help="the locustfile to run (default locustfile.py)")
    p.add_argument("-H", "--host", help="base URL of the system under test")
    p.add_argument("-u", "--users", default="1", help="peak number of users")
    p.add_argument("-r", "--spawn-rate", default="1", help="users started per second")
    p.add_argument("-t", "--run-time", help="stop after this long: 300s, 20m, 3h, 1h30m")
    p.add_argument("--headless", action="store_true", help="no dashboard: start at once, end with the run")
    p.add_argument("--autostart", action="store_true", help="with the dashboard: start at once, not from the page")
    p.add_argument(
        "--autoquit",
        type=int,
        default=None,
        metavar="SECONDS",
        help="with the dashboard: quit this long after the run ends (default: serve the result until Ctrl-C)",
    )
    p.add_argument("--csv", metavar="PREFIX", help="write Locust's CSV files")
    p.add_argument("--csv-full-history", action="store_true", help="per-endpoint rows in the history CSV")
    p.add_argument("--html", metavar="FILE", help="write a self-contained HTML report ({u}, {r}, {t} are replaced)")
    p.add_argument("--json", action="store_true", help="print the final stats as JSON instead of tables")
    p.add_argument("--json-file", metavar="FILE", help="write the full result as JSON")
    p.add_argument("--only-summary", action="store_true", help="only the final tables, not every 2 s")
    p.add_argument("--print-stats", action="store_true", help="print the stats table every 2 s (the default)")
    p.add_argument("--exit-code-on-error", type=int, default=1, help="exit code when requests failed (default 1)")
    p.add_argument("-s", "--stop-timeout", default="0", help="time users get to finish their task at the end")
    p.add_argument("-L", "--loglevel", default="INFO", help="accepted for compatibility")
    p.add_argument("-l", "--list", action="store_true", help="list the User classes and exit")
    p.add_argument("-T", "--tags", nargs="*", metavar="TAG", help="only tasks with one of these tags")
    p.add_argument("-E", "--exclude-tags", nargs="*", metavar="TAG", help="no tasks with these tags")
    p.add_argument(
        "--processes",
        type=int,
        default=1,
        help="worker processes, one engine each, statistics merged losslessly (-1: one per core)",
    )
    p.add_argument("--insecure", action="store_true", help="accept any TLS certificate")
    p.add_argument(
        "--http2", action="store_true", help="HTTP/2 for the users' requests (ALPN over TLS, prior knowledge over http)"
    )
    p.add_argument(
        "--rate",
        type=to_rate,
        help="open model: task iterations start at this rate a second, whatever the server does; -u caps the users",
    )
    p.add_argument(
        "--arrival", choices=["constant", "poisson"], default="constant", help="open model: spacing of the arrivals"
    )
    p.add_argument("--config", metavar="FILE", help="a config file (key = value lines, or TOML [tool.locust])")
    live.add_arguments(p.add_argument_group("dashboard"), default_port=8089)
    add_threshold_arguments(p)
    monitor.add_arguments(p)
    limit.add_arguments(
        p, "the most users the target serves (each step the file afresh)", "--max-users", limit.DEFAULT_SLOS
    )
    p.add_argument("user_classes", nargs="*", metavar="UserClass", help="run only these User classes")


def _location(exc: BaseException, path: str) -> str:
    """The line of the locustfile an exception came from."""
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        if os.path.abspath(frame.filename) == os.path.abspath(path):
            return f"{path}:{frame.lineno}"
    return path


_real_sleep = time.sleep


class _CooperativeSleep:
    """`time.sleep` while squall runs a locustfile: in a user it waits on the hub, so the other users go
    on (as Locust's gevent patching does); elsewhere it sleeps."""

    hub: Hub | None = None  # the hub of the run, once it starts

    def __call__(self, seconds: float | SupportsIndex) -> None:
        hub = self.hub
        if hub is not None and getcurrent() is not hub.main:
            hub.sleep(float(seconds))
        else:
            _real_sleep(seconds)


cooperative_sleep = _CooperativeSleep()


def load_locustfile(path: str) -> tuple[list[type[User]], type[LoadTestShape] | None]:
    """Runs the file with `locust` resolving to squall; returns (User classes, shape class or None)."""
    if not os.path.isfile(path):
        raise ScriptError(f"locustfile '{path}' not found")
    locust_compat.install()
    time.sleep = cooperative_sleep
    directory = os.path.dirname(os.path.abspath(path))
    if directory not in sys.path:
        sys.path.insert(0, directory)
    spec = importlib.util.spec_from_file_location("locustfile", path)
    if spec is None or spec.loader is None:
        raise ScriptError(f"{path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except SyntaxError as e:
        raise ScriptError(f"{e.filename}:{e.lineno}: syntax error: {e.msg}") from None
    except Exception as e:
        raise ScriptError(f"{_location(e, path)}: {type(e).__name__}: {e}") from None
    users = [
        v
        for v in vars(module).values()
        if isinstance(v, type) and issubclass(v, User) and not v.__dict__.get("abstract", False)
    ]
    shapes = [
        v
        for v in vars(module).values()
        if isinstance(v, type)
        and issubclass(v, LoadTestShape)
        and v is not LoadTestShape
        and v.__module__ == "locustfile"
    ]
    return users, (shapes[0] if shapes else None)


def _number(text: str, what: str, cast: Callable[[str], Number], minimum: float = 0) -> Number:
    try:
        value = cast(text)
    except (TypeError, ValueError):
        raise UsageError(f"invalid {what} '{text}'") from None
    if value < minimum:
        raise UsageError(f"invalid {what} '{text}'")
    return value


def run(args: argparse.Namespace) -> int:
    users = _number(args.users, "number of users", int)
    spawn_rate = _number(args.spawn_rate, "spawn rate", float, 0.001)
    worker = processes.worker()
    if worker is None:
        html = args.html and _html_path(args)
        report.check_writable(json_file=args.json_file, csv=args.csv and args.csv + "_stats.csv", html=html)
    if args.find_limit and worker is None:
        return run_limit.find_limit(args, _final_output)
    args.thresholds, args.watch = thresholds.from_args(args)
    target_monitor = monitor.Monitor.from_args(args) if worker is None else None
    if worker is None and args.processes != 1:
        if not args.headless:
            sys.stderr.write("squall: the dashboard does not follow --processes runs yet; running headless\n")
        return processes.run_processes(args, users, _final_output)
    if worker is not None:
        users, spawn_rate = processes.share(users, worker), spawn_rate / worker[1]
    try:
        run_time = parse_duration(args.run_time) if args.run_time else None
        stop_timeout = parse_duration(args.stop_timeout) if args.stop_timeout not in ("0", "0s") else 0.0
    except ValueError as e:
        raise UsageError(str(e)) from None
    classes, shape_class = args.loaded  # loaded by the command line, before its final parse
    if args.list:
        print("\n".join(c.__name__ for c in classes))
        return exitcodes.OK
    if args.user_classes:
        by_name = {c.__name__: c for c in classes}
        unknown = [n for n in args.user_classes if n not in by_name]
        if unknown:
            raise UsageError(
                f"unknown User class {', '.join(unknown)} (the locustfile has: {', '.join(by_name) or 'none'})"
            )
        classes = [by_name[n] for n in args.user_classes]
    if not classes:
        sys.stderr.write(f"squall: error: {args.locustfile}: no User class with tasks found\n")
        return exitcodes.USAGE
    if args.tags or args.exclude_tags:
        for c in classes:
            filter_tasks_by_tags(c, args.tags, args.exclude_tags)
    limits.ensure_open_files(max(users, 1))  # one keep-alive connection per user
    dashboard = None
    if not args.headless and worker is None:
        interactive = shape_class is None and not args.rate
        controls = {"start": not args.autostart, "users": interactive, "stop": True, "reset": True}
        shown_host = split_userinfo(args.host or "")[0]  # the page never sees the credentials
        form = {"users": users, "spawn_rate": spawn_rate, "host": shown_host}
        load = {"model": "open" if args.rate else "users", "users": users, "spawn_rate": spawn_rate, "rate": args.rate}
        title = f"squall: {os.path.basename(args.locustfile)}"
        dashboard = live.start(args, "run", "http", args.host or "", controls=controls, form=form, load=load)
        dashboard.store.meta["title"] = title

    engine = _engine.ScriptEngine(insecure=args.insecure, http2=args.http2)
    hub = Hub(engine)
    cooperative_sleep.hub = hub
    env = Environment(hub=hub, host=args.host, user_classes=classes, parsed_options=args, shape_class=shape_class)
    shape = shape_class() if shape_class else None
    if shape:
        shape.runner = env.runner
    events.init.fire(environment=env, runner=env.runner, web_ui=None)

    received: list[int] = []

    def on_signal(signum: int) -> None:
        received.append(signum)
        env.runner.quit()

    def watchdog(_signum: int, _frame: FrameType | None) -> None:
        held = hub.running_for()
        if held > HANG_LIMIT:
            raise UserHung(f"a task ran {held:.0f} s without yielding (no request, wait or sleep)")

    generator = GeneratorWatch()
    load = {"model": "open" if args.rate else "users", "users": users, "spawn_rate": spawn_rate}
    partial = live.partial_files(args.json_file if worker is None else None, "http", args.host or "", load)
    previous_alarm = signal.signal(signal.SIGALRM, watchdog)
    signal.setitimer(signal.ITIMER_REAL, 1.0, 1.0)
    try:
        with on_stop_signals(on_signal):
            start = _wait_for_start(dashboard, received) if dashboard and not args.autostart else {}
            if start is None:
                reason = "interrupted"
            else:
                users = start.get("users", users)
                spawn_rate = start.get("spawn_rate", spawn_rate)
                if start.get("host") and start["host"] != split_userinfo(args.host or "")[0]:  # a new host
                    env.host = args.host = start["host"]
                reason = _drive(
                    env, hub, classes, shape, users, spawn_rate, run_time, stop_timeout, args, dashboard, partial,
                    generator, target_monitor,
                )  # fmt: skip
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous_alarm)
    if received:
        reason = "interrupted"
    result = engine.finish(reason, page.redact_argv([args.host])[0] if args.host else "")
    result["exceptions"] = [dict(x, nodes="local") for x in env.exceptions.values()]
    observe(result, generator, target_monitor)
    env.result = result
    if worker is not None:
        with open(os.environ["SQUALL_WORKER_RESULT"], "w") as f:
            json.dump(result, f)
    else:
        _final_output(result, args)
    if partial is not None:
        partial.done()
    if dashboard is not None:
        dashboard.store.finish(result)
    events.quitting.fire(environment=env, reason=reason)
    if dashboard is not None and not received:
        _serve_the_end(dashboard, args.autoquit)
    if received:
        return exitcodes.INTERRUPTED if received[0] == signal.SIGINT else exitcodes.TERMINATED
    if env.process_exit_code is not None:
        return env.process_exit_code
    if any(not t["passed"] for t in result.get("thresholds", [])):
        return exitcodes.THRESHOLDS
    if result["aggregate"]["failures"] or result["exceptions"]:
        code: int = args.exit_code_on_error
        return code
    return exitcodes.OK


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
) -> str:
    """The test itself: spawning, shape ticks, periodic stats, the dashboard, the end; returns the stop
    reason."""
    runner = env.runner
    spawner = Spawner(env, classes)
    worker = processes.worker()
    share = worker[1] if worker else 1  # this process's part of a rate

    def open_model(rate: float, duration: float | None = None) -> None:
        """From now on, task iterations arrive at `rate` a second (the open model), for `duration`."""
        if env.open_pool is None:
            env.open_pool = OpenPool(env, spawner, users)
            hub.on_arrivals = env.open_pool.dispatch
            spawner.set_target(0, spawn_rate)
        hub.engine.set_rate(rate / share, args.arrival, duration)

    if args.rate:
        open_model(args.rate, run_time)  # exactly rate x run time arrivals
    else:
        spawner.set_target(users, spawn_rate)
    start = time.monotonic()
    deadline = start + run_time if run_time else None
    runner.state = "spawning"
    events.test_start.fire(environment=env)
    next_stats = start + STATS_INTERVAL
    next_tick = start
    last_counts: LiveCounts = (start, {})
    reason = "completed"
    watch: thresholds.Watch | None = args.watch
    store = dashboard.store if dashboard else None
    publisher = live.Publisher(hub.engine.live, store, partial, generator, target_monitor)
    if target_monitor is not None:
        target_monitor.start(time.time())
    env.started_at = start
    if dashboard is not None:
        dashboard.store.set(started=start)
    while True:
        now = time.monotonic()
        hub.engine.set_users(runner.user_count)
        if runner.quitting:
            break  # runner.quit() from the script, or a signal (run() marks that one interrupted)
        if spawner.done() and not shape:
            break  # every user stopped by itself: nothing is left to run
        if deadline is not None and now >= deadline:
            reason = "duration"
            break
        if shape and now >= next_tick:
            next_tick = now + 1.0
            tick = shape.tick()
            if tick is None:
                break
            if isinstance(tick, dict):  # {"rate": R}: the open model at R iterations a second
                open_model(float(tick["rate"]))
            else:
                rate = tick[1] / share
                spawner.set_target(processes.share(int(tick[0]), worker), rate, tick[2] if len(tick) > 2 else None)
        if env.open_pool is None:
            spawner.step()
        if (env.open_pool or len(spawner.spawned) >= spawner.target) and runner.state == "spawning":
            runner.state = "running"
            events.spawning_complete.fire(user_count=runner.user_count)
        if now >= next_stats and not args.only_summary:
            next_stats = now + STATS_INTERVAL
            last_counts = _print_live(hub.engine, last_counts)
        if dashboard is not None:
            for action, command in dashboard.take_commands():
                if action == "users" and not shape and env.open_pool is None:
                    users = processes.share(command["users"], worker)
                    spawner.set_target(users, command["spawn_rate"] / share)
                    runner.state = "spawning"
                elif action == "stop":
                    runner.quit()
                elif action == "reset":
                    hub.engine.reset_totals()
        if publisher.due():  # once a second: the generator's watch, the dashboard, the partial files
            exceptions = [dict(x, nodes="local") for x in env.exceptions.values()]
            target = None if env.open_pool else spawner.target
            live_now = publisher.tick(
                force=True, users=runner.user_count, target_users=target, state=runner.state, exceptions=exceptions
            )
            if watch is not None and watch.stops(live_now, time.monotonic() - start):
                runner.quit()
        hub.run_until(min(t for t in (now + 0.1, deadline) if t is not None))
    runner.state = "stopping"
    publisher.tick(force=True, state="stopping")
    events.test_stopping.fire(environment=env)
    if env.open_pool is not None and not runner.quitting:
        # No more arrivals; the iterations running, and those waiting for a user, may finish (up to a
        # grace); what still waits then was never started: dropped.
        hub.engine.set_rate(0.0, args.arrival)
        drain_by = time.monotonic() + max(stop_timeout, 10.0)
        while not env.open_pool.all_idle() and time.monotonic() < drain_by:
            hub.run_until(min(drain_by, time.monotonic() + 0.05))
    if stop_timeout > 0:  # users finish the task they are in, up to --stop-timeout
        runner.stopping = True
        stop_by = time.monotonic() + stop_timeout
        while runner.users and time.monotonic() < stop_by:
            hub.run_until(min(stop_by, time.monotonic() + 0.1))
    for g in list(runner.users.values()):
        hub.kill(g)
    grace_end = time.monotonic() + max(stop_timeout, 10.0)
    while runner.users and time.monotonic() < grace_end:
        hub.run_until(time.monotonic() + 0.1)
    runner.state = "stopped"
    events.test_stop.fire(environment=env)
    return reason


def _wait_for_start(dashboard: Dashboard, received: list[int]) -> dict[str, Any] | None:
    """Without --autostart the run starts from the dashboard, as Locust's does; None if stopped first."""
    sys.stderr.write(f"squall: open {dashboard.url} to start the test\n")
    dashboard.store.set(state="ready")
    while not received:
        for action, command in dashboard.take_commands():
            if action == "start":
                return command
            if action == "stop":
                return None
        _real_sleep(0.05)
    return None


def _serve_the_end(dashboard: Dashboard, autoquit: int | None) -> None:
    """After the run the dashboard shows its result: for `--autoquit` seconds, or until Ctrl-C."""
    if autoquit is not None:
        live.linger(dashboard, max(autoquit, 0))
        return
    sys.stderr.write(f"squall: the run ended; its dashboard stays at {dashboard.url} until Ctrl-C\n")
    try:
        while True:
            _real_sleep(3600)
    except KeyboardInterrupt:
        pass
    dashboard.stop()


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
    sys.stdout.write(locust_console.stats_table(endpoints, aggregate, 0.0, rates) + "\n")
    sys.stdout.flush()
    return now, counts


def _html_path(args: argparse.Namespace) -> str:
    """--html with Locust's {u}, {r} and {t} replaced."""
    html: str = args.html
    return (
        html.replace("{u}", str(args.users))
        .replace("{r}", str(args.spawn_rate))
        .replace("{t}", str(args.run_time or ""))
    )


def _final_output(result: dict[str, Any], args: argparse.Namespace) -> None:
    # The verdicts go into the result first (its files carry them); on stderr when stdout is --json's.
    verdict_out = sys.stderr if args.json else sys.stdout
    watch = getattr(args, "watch", None)
    verdicts = thresholds.evaluate_all(getattr(args, "thresholds", []), result) if args.thresholds else []
    if verdicts:
        result["thresholds"] = [v.to_json() for v in verdicts]
        if watch is not None and watch.failed:
            result["stop_reason"] = "threshold"
    if args.json:
        rows = [dict(e, **{"type": e["method"]}) for e in result["endpoints"]]
        for r in rows:
            r.pop("histogram", None)
        sys.stdout.write(json.dumps(rows, indent=1) + "\n")
    else:
        out = sys.stdout
        out.write(locust_console.stats_table(result["endpoints"], result["aggregate"], result["duration_s"]))
        out.write("\n" + locust_console.percentiles_table(result["endpoints"], result["aggregate"]))
        out.write("\n" + locust_console.error_report(result["errors"]))
        if result["exceptions"]:
            out.write("\n" + locust_console.exceptions_report(result["exceptions"]))
    sys.stdout.flush()
    if result["abandoned"]:  # on stderr: stdout keeps Locust's tables exactly
        sys.stderr.write(
            f"squall: {result['abandoned']:,} requests in flight when their users stopped were "
            "cancelled; they are not in the stats\n"
        )
    command_meta = page.meta("run", getattr(args, "argv", None) or [], args.host or "")
    command_meta["title"] = f"squall: {os.path.basename(args.locustfile)}"
    written = report.write_files(
        result,
        json_path=args.json_file,
        csv_prefix=args.csv,
        full_history=args.csv_full_history,
        html_path=_html_path(args) if args.html else None,
        html_meta=command_meta,
    )
    print_observations(result, verdict_out)
    if verdicts:
        verdict_out.write("\n" + thresholds.block(verdicts))
        verdict_out.flush()
    for path in written:
        sys.stderr.write(f"wrote {path}\n")

"""`squall -f locustfile.py` (or `squall run -f ...`): runs a locustfile unchanged. Users are greenlets
on the hub; every request runs in the engine. Output is Locust's: the stats table every 2 s, the
final tables, the error report, the CSV files, `--json`/`--json-file` in Locust's JSON, and Locust's
log lines on stderr (`squall.log`); squall's full result goes to `--result-json`.

This module reads the command line and chooses where the run goes: a Ray worker's role, `--list` and
the task ratios, `--find-limit` (run_limit), a distributed run, `--processes`, or the run in this
process (run_local: its tests are run_test's, its outputs run_output's)."""

from __future__ import annotations

import argparse
import logging
import sys
import time
from typing import Any

from squall import (
    __version__,
    distributed,
    exitcodes,
    load_values,
    locust_compat,
    monitor,
    otel,
    outputs,
    processes,
    start_up,
    stats,
    thresholds,
)
from squall import locustfile as locustfiles
from squall.commands import run_checks, run_limit, run_output
from squall.commands.run_local import run_here
from squall.commands.run_test import whole
from squall.durations import parse_duration
from squall.errors import UsageError
from squall.locustfile import ScriptError
from squall.log import main_logger, runners_logger, setup_logging
from squall.options.run_arguments import add_arguments, check_unsupported, locust_aliases, no_effect_notes
from squall.runtime import limits
from squall.runtime.sleep import cooperative_sleep
from squall.shape import LoadTestShape
from squall.user.inspectuser import task_ratio_json, task_ratio_text
from squall.user.task import filter_tasks_by_tags
from squall.user.users import User

__all__ = ["ScriptError", "add_arguments", "load_locustfile", "run"]


def load_locustfile(spec: str, users_here: bool = True) -> tuple[list[type[User]], type[LoadTestShape] | None]:
    """Imports the locustfiles of `-f` with `locust` resolving to squall, after gevent's patching where
    this process runs the users (`users_here`); returns (User classes, shape class or None). ScriptError
    when they cannot load."""
    locust_compat.install(gevent=users_here)
    time.sleep = cooperative_sleep
    start_up.resume()  # the file's code is the user's: its garbage is collected as ever
    return locustfiles.load(spec)


def run(args: argparse.Namespace) -> int:
    locust_aliases(args)
    parser = getattr(args, "parser", None)
    if parser is not None and (code := check_unsupported(args, parser)) is not None:
        return code
    notes = no_effect_notes(args, parser) if parser is not None else []
    users_given = args.users is not None
    # (as the dashboard's Start and Edit read them, and a config file's: squall.load_values)
    users = load_values.users(args.users if users_given else "1")
    spawn_rate = load_values.spawn_rate(args.spawn_rate)
    try:
        run_time = parse_duration(args.run_time) if args.run_time else None
        stop_timeout = parse_duration(args.stop_timeout) if args.stop_timeout not in ("0", "0s") else 0.0
    except ValueError as e:
        raise UsageError(str(e)) from None
    # Locust's types in the parsed options a locustfile reads (`environment.parsed_options`).
    args.num_users, args.spawn_rate, args.run_time = users, spawn_rate, whole(run_time)
    args.stop_timeout = whole(stop_timeout)  # (Locust's: an int, 0 when not given)
    classes, shape_class = args.loaded  # loaded by the command line, before its final parse
    stats.validate_stats_configuration()  # the percentile settings the locustfile may have patched, as Locust
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
        html = args.html and run_output.html_path(args)
        read = [*(args.locustfile or "").split(","), getattr(args, "config", None)]
        outputs.check_writable(result_json=args.result_json, csv=args.csv, html=html, read=read)
    if args.find_limit and worker is None:
        sys.stderr.writelines(notes)
        return run_limit.find_limit(args, run_output.final_output)
    args.thresholds, args.watch = thresholds.from_args(args)
    target_monitor = monitor.Monitor.from_args(args) if worker is None else None
    distributed.check(args)
    sys.stderr.writelines(notes)  # (the command line has passed its checks)
    if distributed.requested(args) or node_role == "master":
        if not args.headless:
            sys.stderr.write("squall: the dashboard does not follow distributed runs yet; running headless\n")
        from squall.distributed.runs import run_locustfile  # (start-up: as roles above)

        return run_locustfile(args, users, run_output.final_output, classes, shape_class)
    if worker is None and args.processes not in (None, 1):
        if not args.headless:
            sys.stderr.write("squall: the dashboard does not follow --processes runs yet; running headless\n")
        return processes.run_processes(args, users, run_output.final_output, signal_codes=False)  # Locust's code
    if worker is not None:
        users, spawn_rate = processes.share(users, worker), spawn_rate / worker[1]
    limits.check_open_files(max(users, 1))  # (run_here ensures it: here a refusal is the one line printed)
    _start_logging(args, classes, shape_class, users_given)
    for name in taskless:  # Locust's warning; the class still runs (its users' turns are errors)
        logging.warning(f"{name} had no tasks left after filtering, instantiating it will fail!")
    return run_here(args, classes, shape_class, users, spawn_rate, run_time, stop_timeout, target_monitor)


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

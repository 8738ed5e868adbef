"""The three commands' distributed runs: what each command hands the driver (its shares, its console
line, its way of finishing), so that the commands themselves only branch to here."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any, Callable

from squall import exitcodes, locustfile, log, processes
from squall.distributed import roles, shares
from squall.distributed.actor import pack
from squall.distributed.cluster import ClusterError
from squall.distributed.nodes import WORKER_RESOURCE
from squall.distributed.workers import Command
from squall.env import Environment
from squall.errors import UsageError
from squall.event import events
from squall.report.progress import MqttProgressLine, ProgressLine
from squall.runners import STATE_RUNNING, STATE_STOPPED, MasterRunner
from squall.web import live

if TYPE_CHECKING:
    from squall.monitor import Monitor
    from squall.shape import LoadTestShape
    from squall.thresholds import Watch
    from squall.user.users import User
    from squall.web.server import Dashboard

Finish = Callable[[dict[str, Any], int | None], int]


def _drive(args: argparse.Namespace, command: Command) -> int:
    from squall.distributed import driver  # start-up: the driver's modules load only for a --ray run

    return driver.run(args, command)


def _line(args: argparse.Namespace, make: Callable[[], Any]) -> Any:
    return make() if not getattr(args, "quiet", False) and sys.stderr.isatty() else None


def run_bench(
    args: argparse.Namespace,
    config: dict[str, Any],
    dashboard: Dashboard | None,
    watch: Watch | None,
    monitor: Monitor | None,
    finish: Finish,
    load: dict[str, Any],
) -> int:
    """`squall bench --ray`: each worker a share of the connections, requests and rate."""
    command = Command(
        name="bench",
        kind="http",
        url=args.url,
        units=config["connections"],
        what="connections",
        finish=finish,
        shares=lambda n: shares.bench_shares(config, n),
        line=_line(args, lambda: ProgressLine(config)),
        dashboard=dashboard,
        partial=live.partial_files(args.json, "http", args.url, load),
        watch=watch,
        monitor=monitor,
        remaining=lambda worker, elapsed, sent: shares.remaining(config, worker, elapsed, sent),
    )
    return _drive(args, command)


def run_mqtt(
    args: argparse.Namespace,
    config: dict[str, Any],
    dashboard: Dashboard | None,
    watch: Watch | None,
    monitor: Monitor | None,
    finish: Finish,
) -> int:
    """`squall mqtt --ray`: each worker a share of the clients (their indices, so their client ids and
    topics, follow on from the previous worker's), with one run tag for all."""
    if config.get("subscribe_only") is not None:
        raise UsageError("--subscribe-only runs on one machine: drop --ray")
    by_messages = config.get("messages") is not None and config.get("duration") is None
    command = Command(
        name="mqtt",
        kind="mqtt",
        url=config["broker"],
        units=config["clients"],
        what="clients",
        finish=finish,
        shares=lambda n: shares.mqtt_shares(config["clients"], n),
        env={"SQUALL_MQTT_RUN_TAG": str(config["run_tag"])},
        line=_line(args, lambda: MqttProgressLine(config)),
        dashboard=dashboard,
        partial=live.partial_files(args.json, "mqtt", config["broker"], {}),
        watch=watch,
        monitor=monitor,
        # -n is per client: a new worker cannot know where the lost clients were
        remaining=None if by_messages else lambda worker, elapsed, _: shares.remaining(config, worker, elapsed, 0),
    )
    return _drive(args, command)


def run_locustfile(
    args: argparse.Namespace,
    users: int,
    final_output: Callable[[dict[str, Any], argparse.Namespace], None],
    classes: list[type[User]] | None = None,
    shape_class: type[LoadTestShape] | None = None,
) -> int:
    """`squall -f locustfile.py --ray ADDRESS` (or `--master`): as `processes.run_processes`, with the
    workers on the cluster: each a share of the users and of the spawn rate (headless; the dashboard
    does not follow distributed runs yet). This process is Locust's master: its environment has a
    `MasterRunner`, and `init`, `test_start`, `worker_report`, `test_stop` and `quitting` fire here as
    on Locust's master; the workers' processes have `WorkerRunner`s (squall.runners)."""
    env = Environment(host=args.host, user_classes=classes or [], parsed_options=args, shape_class=shape_class)
    runner = MasterRunner(env)
    env.runner = runner
    if env.shape_class is not None:
        env.shape_class.runner = runner
    events.init.fire(environment=env, runner=runner, web_ui=None)
    if log.unhandled_greenlet_exception:  # an init listener raised: fatal, as in Locust (logged already)
        return exitcodes.ALL_FAILED

    def started() -> None:
        runner.state = STATE_RUNNING
        events.test_start.fire(environment=env)

    def finish(result: dict[str, Any], signum: int | None) -> int:
        env.result = result
        runner.state = STATE_STOPPED
        events.test_stop.fire(environment=env)
        events.quitting.fire(environment=env, reverse=True)  # as Locust: last added first
        final_output(result, args)
        if signum is not None:
            return exitcodes.stopped_by(signum)
        if env.process_exit_code is not None:
            return env.process_exit_code
        if any(not t["passed"] for t in result.get("thresholds", [])):
            return exitcodes.THRESHOLDS
        agg = result["aggregate"]
        if agg["requests"] and agg["failures"] == agg["requests"]:
            return exitcodes.ALL_FAILED
        return exitcodes.LISTENER_RAISED if log.unhandled_greenlet_exception else exitcodes.OK

    command = Command(
        name="run",
        kind="http",
        url=getattr(args, "host", None) or "",
        units=users,
        what="users",
        finish=finish,
        shares=lambda n: [{"users": processes.share(users, (i, n))} for i in range(n)],
        watch=getattr(args, "watch", None),
        tables=sys.stderr if getattr(args, "json", False) else sys.stdout,
        runner=runner,
        files=_locustfiles(args.locustfile),
        started=started,
    )
    if not getattr(args, "master", False):
        return _drive(args, command)
    try:
        head, command.prepare = roles.open_master(args)
    except ClusterError as e:
        sys.stderr.write(f"squall: error: {e}\n")
        return exitcodes.CANNOT_START
    command.placement = WORKER_RESOURCE
    try:
        return _drive(args, command)
    finally:
        head.stop()


def _locustfiles(spec: str) -> dict[str, str] | None:
    """The run's locustfiles' texts, for nodes that do not have them (None: nothing to send)."""
    try:
        return pack(locustfile.paths(spec))
    except (locustfile.ScriptError, OSError, UnicodeDecodeError):
        return None

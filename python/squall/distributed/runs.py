"""The three commands' distributed runs: what each command hands the driver (its shares, its console
line, its way of finishing), so that the commands themselves only branch to here."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any, Callable

from squall import exitcodes, processes
from squall.commands.progress import MqttProgressLine, ProgressLine
from squall.distributed import shares
from squall.distributed.workers import Command
from squall.errors import UsageError
from squall.web import live

if TYPE_CHECKING:
    from squall.monitor import Monitor
    from squall.thresholds import Watch
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
) -> int:
    """`squall -f locustfile.py --ray ADDRESS`: as `processes.run_processes` (the same signature), with
    the workers on the cluster: each a share of the users and of the spawn rate (headless; the
    dashboard does not follow distributed runs yet)."""

    def finish(result: dict[str, Any], signum: int | None) -> int:
        final_output(result, args)
        if signum is not None:
            return exitcodes.INTERRUPTED if signum == 2 else exitcodes.TERMINATED
        if any(not t["passed"] for t in result.get("thresholds", [])):
            return exitcodes.THRESHOLDS
        agg = result["aggregate"]
        return exitcodes.ALL_FAILED if agg["requests"] and agg["failures"] == agg["requests"] else exitcodes.OK

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
    )
    return _drive(args, command)

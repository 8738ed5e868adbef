"""`squall mqtt`: simulated devices publishing to an MQTT broker, with delivery proven by subscribers.

The Pepeunit load test's environment variables (PU_TEST_LOAD_MQTT_*) are honoured as defaults, so its
users switch with no new knobs; flags win over them."""

from __future__ import annotations

import argparse
import functools
import os
import random
import sys
from typing import TYPE_CHECKING, Any

from squall import _engine, distributed, exitcodes, inputs, limit, monitor, outputs, processes, thresholds
from squall.commands.drive import drive, find_limit_by_rate, print_observations, refuse_load_flags
from squall.distributed.feed import wait_for_start, worker_feed
from squall.errors import UsageError
from squall.options.arguments import (
    add_output_arguments,
    add_threshold_arguments,
    to_duration,
    to_positive_int,
    to_rate,
)
from squall.report import mqtt_console
from squall.report.progress import MqttProgressLine
from squall.runtime import limits
from squall.runtime.signals import deferred
from squall.web import live, page

if TYPE_CHECKING:
    from squall.options.arguments import Subcommands

# --find-limit's default SLO for MQTT: PUBLISH's latency (the broker's acknowledgement) and errors.
MQTT_SLOS = ["publish.p95<1s", "error_rate<1%"]

# The seed's variables and the flag each one sets (documented in docs/mqtt.md).
ENV = {
    "PU_TEST_LOAD_MQTT_DURATION": "duration",
    "PU_TEST_LOAD_MQTT_UNIT_COUNT": "clients",
    "PU_TEST_LOAD_MQTT_RPS": "rate",
    "PU_TEST_LOAD_MQTT_VALUE_TYPE": "payload",
    "PU_TEST_LOAD_MQTT_DUPLICATE_COUNT": "duplicates",
    "PU_TEST_LOAD_MQTT_MESSAGE_SIZE": "size",
    "PU_TEST_LOAD_MQTT_WORKERS": "processes",
}


def add_parser(commands: Subcommands) -> argparse.ArgumentParser:
    p = commands.add_parser(
        "mqtt",
        help="simulate MQTT devices publishing to a broker, and verify delivery",
        description="Simulated devices, one connection each, publish on a schedule (--rate) or as fast as "
        "their in-flight window allows; --verify proves every message arrived.",
    )
    p.add_argument(
        "--broker",
        default="mqtt://127.0.0.1:1883",
        help="mqtt://host:port or mqtts://host:port (default mqtt://127.0.0.1:1883)",
    )
    load = p.add_argument_group("load")
    load.add_argument("-u", "--clients", help="simulated devices, one connection each (default 1)")
    rates = load.add_mutually_exclusive_group()
    rates.add_argument("--rate", help="messages per second per client (default: as fast as possible)")
    rates.add_argument("--total-rate", help="messages per second over all clients")
    load.add_argument("-t", "--duration", help="publish for this long: 30s, 2m (the measured time)")
    load.add_argument("-n", "--messages", help="messages per client")
    load.add_argument(
        "--connect-rate",
        help="new connections per second; they publish as they connect "
        "(default: all connect first, then the measured time starts)",
    )
    load.add_argument(
        "--inflight",
        default="10",
        help="unacknowledged messages per client (default 10); at QoS 0 a "
        "message is acknowledged by the PINGRESP to a PINGREQ sent after it",
    )
    load.add_argument("--processes", help="worker processes sharing the clients (default 1)")
    load.add_argument("--threads", help="engine threads per process (default: one per core)")
    msg = p.add_argument_group("messages")
    msg.add_argument("--qos", type=int, choices=[0, 1, 2], default=0, help="quality of service (default 0)")
    msg.add_argument(
        "--topic",
        default="squall/{client}",
        help="topic template with {client} (index), {id} (client id) and {seq} (default squall/{client})",
    )
    msg.add_argument("--payload", help="text or number (generated values), @FILE, or a literal payload (default text)")
    msg.add_argument("--size", help="characters per generated value (default 16)")
    msg.add_argument("--duplicates", help="send each generated value K times in a row (default 1)")
    msg.add_argument("--retain", action="store_true", help="set the retain flag")
    conn = p.add_argument_group("connection")
    conn.add_argument(
        "--mqtt-version", choices=["3.1.1", "5"], default="3.1.1", help="protocol version (default 3.1.1)"
    )
    conn.add_argument("--username")
    conn.add_argument("--password")
    conn.add_argument("--client-id-prefix", help="client ids are PREFIX + index (default squall-RANDOM-)")
    conn.add_argument("--keepalive", default="60", help="keepalive in seconds (default 60)")
    conn.add_argument(
        "--clean-session",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="start with a clean session (default yes; --no-clean-session to keep one)",
    )
    conn.add_argument(
        "--timeout",
        default="10s",
        help="connect and acknowledgement timeout, and how long a paced run "
        "that fell behind may send past its end (default 10s)",
    )
    conn.add_argument("--insecure", action="store_true", help="do not verify the broker's TLS certificate")
    ver = p.add_argument_group("delivery")
    ver.add_argument(
        "--verify",
        action="store_true",
        help="subscribe to the published topics and prove delivery: "
        "published, delivered, lost, duplicated, out of order, end-to-end latency",
    )
    ver.add_argument(
        "--subscribers",
        default="1",
        help="verification subscriber connections, sharing the messages through a shared subscription (default 1)",
    )
    ver.add_argument(
        "--verify-wait",
        default="5s",
        help="after publishing ends, how long to wait without a delivery before the rest count as lost (default 5s)",
    )
    ver.add_argument(
        "--subscribe-only",
        metavar="FILTER",
        help="publish nothing: measure what a running system delivers on FILTER (for -t, or until -n messages)",
    )
    add_output_arguments(p, "write Locust-format CSV files")
    live.add_arguments(p.add_argument_group("dashboard"), default_port=None, autoquit=True)
    add_threshold_arguments(p)
    monitor.add_arguments(p)
    limit.add_arguments(p, "the highest total message rate the broker sustains", "--max-rate", MQTT_SLOS)
    distributed.add_arguments(p)
    p.set_defaults(func=run)
    return p


def _from_env(args: argparse.Namespace) -> None:
    """Fills flags not given on the command line from the seed's environment variables."""
    for var, dest in ENV.items():
        value = os.environ.get(var)
        if value is None or getattr(args, dest) is not None:
            continue
        if dest == "payload":
            kinds = {"text": "text", "number": "number"}
            if value.lower() not in kinds:
                raise UsageError(f"{var}='{value}' must be Text or Number")
            value = kinds[value.lower()]
        check = {"clients": to_positive_int, "duration": to_duration, "rate": to_rate}.get(dest)
        if check is not None:
            try:  # (checked here, so that the error names the variable, not a flag the user never typed)
                check(value)
            except (UsageError, ValueError) as e:
                raise UsageError(f"{var}: {e}") from None
        setattr(args, dest, value)


def _payload(args: argparse.Namespace) -> tuple[str, bytes | None]:
    """(value kind, fixed payload bytes or None)."""
    spec = args.payload or "text"
    if spec in ("text", "number"):
        return spec, None
    path = inputs.at_file(spec)
    if path is not None:
        try:
            return "text", inputs.read_bytes(path, inputs.MAX_SENT_FILE, f"payload file '{path}'")
        except inputs.InputError as e:
            raise UsageError(str(e)) from None
    return "text", spec.encode()


def engine_config(args: argparse.Namespace) -> dict[str, Any]:
    _from_env(args)
    clients = to_positive_int(args.clients) if args.clients else 1
    duration = to_duration(args.duration) if args.duration else None
    messages = to_positive_int(args.messages) if args.messages else None
    if duration is None and messages is None:
        raise UsageError("give a duration (-t) or a number of messages per client (-n)")
    rate = to_rate(args.rate) if args.rate else None
    if args.total_rate:
        rate = to_rate(args.total_rate) / clients
    kind, fixed = _payload(args)
    if args.subscribe_only is not None and args.verify:
        raise UsageError("--subscribe-only and --verify don't go together: --verify subscribes to what it publishes")
    run_tag = int(os.environ.get("SQUALL_MQTT_RUN_TAG") or random.getrandbits(32))
    prefix = args.client_id_prefix if args.client_id_prefix is not None else f"squall-{run_tag:08x}-"
    return {
        "broker": args.broker,
        "clients": clients,
        "rate": rate,
        "messages": messages,
        "duration": duration,
        "qos": args.qos,
        "topic": args.topic,
        "value": kind,
        "payload": list(fixed) if fixed is not None else None,
        "size": to_positive_int(args.size) if args.size else 16,
        "duplicates": to_positive_int(args.duplicates) if args.duplicates else 1,
        "username": args.username,
        "password": args.password,
        "client_id_prefix": prefix,
        "keepalive": _whole(args.keepalive, "--keepalive", 65535),
        "clean_session": args.clean_session,
        "mqtt_version": args.mqtt_version,
        "connect_rate": to_rate(args.connect_rate) if args.connect_rate else None,
        "retain": args.retain,
        "inflight": to_positive_int(args.inflight),
        "timeout": to_duration(args.timeout),
        "insecure": args.insecure,
        "verify": args.verify,
        "subscribers": to_positive_int(args.subscribers),
        "subscribe_only": args.subscribe_only,
        "verify_wait": to_duration(args.verify_wait),
        "run_tag": run_tag,
        "threads": to_positive_int(args.threads) if args.threads else None,
    }


def _whole(text: str, flag: str, most: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise UsageError(f"{flag} '{text}' is not a whole number") from None
    if not 0 <= value <= most:
        raise UsageError(f"{flag} must be between 0 and {most}")
    return value


def run(args: argparse.Namespace) -> int:
    live.check_autoquit(args)
    if args.find_limit:
        return find_limit(args)
    distributed.check(args)
    config = engine_config(args)
    outputs.check_writable(json=args.json, csv=args.csv, html=args.html, read=[inputs.at_file(args.payload)])
    args.thresholds, watch = thresholds.from_args(args)
    target_monitor = monitor.Monitor.from_args(args) if processes.worker() is None else None
    n = to_positive_int(args.processes) if args.processes else 1
    worker = processes.worker()
    if n > 1 and args.ray:
        raise UsageError("--processes and --ray don't go together: use --workers")
    if n > 1 and worker is None and not args.subscribe_only:
        os.environ["SQUALL_MQTT_RUN_TAG"] = str(config["run_tag"])
        args.processes = n
        return processes.run_processes(args, config["clients"], _final_output, what="clients")
    if worker is not None:
        config["first_client"] = sum(processes.share(config["clients"], (i, worker[1])) for i in range(worker[0]))
        config["clients"] = processes.share(config["clients"], worker)
    limits.ensure_open_files(config["clients"] + config["subscribers"])
    dashboard = None
    if args.web_port is not None and worker is None:  # before the run: a busy port is a usage error
        controls = {"start": False, "users": False, "stop": True, "reset": not args.ray}
        load = {"model": "open" if config.get("rate") else "closed", "clients": config["clients"], "qos": args.qos}
        if config.get("rate"):
            load["rate"] = config["rate"] * config["clients"]
        dashboard = live.start(args, "mqtt", "mqtt", config["broker"], controls=controls, load=load)
    if distributed.requested(args):
        from squall.distributed import runs  # for start-up, as in `squall bench`

        args.watch = watch
        return runs.run_mqtt(args, config, dashboard, watch, target_monitor, functools.partial(_finish, args=args))
    if worker is not None:
        wait_for_start()  # a distributed run's workers start together
    try:
        engine_run = _engine.Run.mqtt(config)
    except _engine.UsageError as e:
        raise UsageError(str(e)) from None
    except _engine.TargetError as e:
        sys.stderr.write(f"squall mqtt: error: {e}\n")
        return exitcodes.CANNOT_START
    show = not args.quiet and worker is None and sys.stderr.isatty()
    feed = worker_feed(engine_run.progress)  # a worker of a distributed run: its live feed
    partial = feed or live.partial_files(args.json if worker is None else None, "mqtt", config["broker"], {})
    line = MqttProgressLine(config) if show else None
    with deferred():  # a second Ctrl-C waits for the outputs
        result, signum = drive(engine_run, line, dashboard, partial, watch, target_monitor)
        args.watch = watch
        if worker is not None:
            processes.write_result(result)
            code = _code(result, signum)
        else:
            code = _finish(result, signum, args)
        if partial is not None:
            partial.done()
    if dashboard is not None:
        live.serve_the_end(dashboard, result, args.autoquit, signum)
    return code


def _finish(result: dict[str, Any], signum: int | None, args: argparse.Namespace) -> int:
    """The summary, verdicts and files of a run (this process's, or a merged one); its exit code."""
    return _final_output(result, args, signum)


def _code(result: dict[str, Any], signum: int | None) -> int:
    """A worker's exit code (its driver judges the thresholds on the merged result)."""
    return exit_code(result, signum)[0]


def exit_code(
    result: dict[str, Any], signum: int | None = None, verdicts: list[thresholds.Verdict] | None = None
) -> tuple[int, str]:
    """The run's exit code and why (docs/numbers.md's table)."""
    if signum is not None:
        return exitcodes.stopped_by(signum), exitcodes.stopped_why(signum)
    if verdicts and thresholds.failed(verdicts):
        return exitcodes.THRESHOLDS, "a threshold failed"
    m = result["mqtt"]
    delivery = m.get("delivery")
    if m["subscribe_only"]:
        if delivery and delivery["received"]:
            return exitcodes.OK, ""
        return exitcodes.ALL_FAILED, "no message was received"
    if m["published"] == 0:
        top = result["errors"][0]["message"] if result["errors"] else "nothing was acknowledged"
        return exitcodes.ALL_FAILED, f"no message was published (most often: {top})"
    if m["verify"] and delivery and delivery["lost"]:
        return exitcodes.LOST, f"{delivery['lost']:,} messages lost"
    if m["verify"] and (m["unsent"] or m["failed"]):  # never sent, or refused: not delivered either
        refused = max(0, m["failed"] - m["unsent"])  # (`failed` counts the unsent too: each due message is one of 3)
        parts = [f"{m['unsent']:,} messages never sent" if m["unsent"] else ""]
        parts.append(f"{refused:,} refused or unacknowledged" if refused else "")
        return exitcodes.LOST, " and ".join(p for p in parts if p) + ": not delivered"
    return exitcodes.OK, ""


def _final_output(result: dict[str, Any], args: argparse.Namespace, signum: int | None = None) -> int:
    """Prints the summary and the verdicts (with the exit code when it is not theirs), writes the files;
    returns the exit code."""
    # Judged first: its stop_reason ("threshold" when --threshold-abort stopped the run) is the summary's.
    verdicts = thresholds.judge(result, getattr(args, "thresholds", []), getattr(args, "watch", None))
    sys.stdout.write(mqtt_console.summary(result))
    sys.stdout.flush()
    print_observations(result)
    code, why = exit_code(result, signum, verdicts)
    outputs.write_and_say(
        result,
        json_path=args.json,
        csv_prefix=args.csv,
        full_history=args.csv_full_history,
        html_path=args.html,
        html_meta=page.meta("mqtt", getattr(args, "argv", None) or [], result["mqtt"]["broker"]),
    )
    thresholds.say(verdicts, code, why)  # (after the files: one that could not be written is its code)
    if code == exitcodes.ALL_FAILED and not result["mqtt"]["subscribe_only"]:
        sys.stderr.write(f"squall mqtt: error: {why}\n")
    elif code == exitcodes.LOST:
        sys.stderr.write(f"squall mqtt: {why}\n")
    return code


def find_limit(args: argparse.Namespace) -> int:
    """`--find-limit`: a probe as fast as the in-flight windows allow, then paced steps (`squall.limit`)
    over the clients' total rate; a step's throughput is PUBLISH's (acknowledged, or written at QoS 0)."""
    refuse_load_flags([("-n", args.messages), ("-t", args.duration), ("--rate", args.rate)])
    if (
        args.total_rate
        or args.web_port is not None
        or args.threshold
        or args.processes
        or args.subscribe_only
        or args.ray
    ):
        raise UsageError("--find-limit takes --slo; not with --total-rate, --web-port, --threshold, --processes, --ray")
    args.duration = args.step_time
    config = engine_config(args)
    clients = config["clients"]
    limits.ensure_open_files(clients + config["subscribers"])
    return find_limit_by_rate(
        args,
        "mqtt",
        args.broker,
        lambda rate, hold, _connections: _engine.Run.mqtt(
            dict(config, rate=None if rate is None else rate / clients, duration=hold, messages=None)
        ),
        lambda r, rate, slos, _connections: limit.judge(r, rate, slos, focus="PUBLISH"),
        "msg/s",
        MQTT_SLOS,
        lambda slo_texts, hold: (
            f"Finding the limit of {args.broker} with {clients} clients at QoS {args.qos}: "
            f"SLO {', '.join(slo_texts)}; {hold:g} s a step"
        ),
        clients=clients,
        qos=args.qos,
    )

"""`squall bench URL`: the quick mode that needs no script, with the flags users know from ab, hey, oha."""

from __future__ import annotations

import argparse
import base64
import functools
import sys
import time
from typing import TYPE_CHECKING, Any, Callable
from urllib.parse import unquote, urlsplit, urlunsplit

from squall import _engine, distributed, exitcodes, inputs, limit, monitor, outputs, processes, thresholds
from squall.commands.drive import drive, find_limit_by_rate, print_observations, refuse_load_flags
from squall.distributed import shares
from squall.distributed.feed import wait_for_start, worker_feed
from squall.errors import UsageError
from squall.monitor import generator
from squall.options.arguments import (
    add_output_arguments,
    add_threshold_arguments,
    to_duration,
    to_positive_int,
    to_rate,
)
from squall.report import console
from squall.report.progress import ProgressLine
from squall.runtime import limits
from squall.runtime.signals import deferred
from squall.web import live, page

if TYPE_CHECKING:
    from squall.options.arguments import Subcommands


def add_parser(commands: Subcommands) -> argparse.ArgumentParser:
    p = commands.add_parser(
        "bench",
        help="load one URL, no script needed",
        description="Load one URL: closed model (-c connections) or open model (--rate). A ws:// or wss:// URL "
        "is a WebSocket: each request is one exchange, a message sent and its reply.",
    )
    p.add_argument("url", help="http://, https://, ws:// or wss:// URL")
    load = p.add_argument_group("load")
    load.add_argument("-n", "--requests", type=str, help="stop after exactly N requests (default 200 without -t)")
    load.add_argument("-c", "--connections", type=str, default="50", help="concurrent connections (default 50)")
    load.add_argument("-t", "--duration", type=str, help="stop after this long: 30s, 2m, 1h30m")
    load.add_argument("--rate", type=str, help="open model: requests per second in total, independent of responses")
    load.add_argument(
        "--arrival",
        choices=["constant", "poisson"],
        default="constant",
        help="open model: spacing of send times (default constant)",
    )
    load.add_argument("--ramp", type=str, help="ramp connections (closed) or rate (open) linearly from zero")
    load.add_argument("--threads", type=str, help="engine threads (default: one per available core)")
    load.add_argument("--processes", type=str, help="worker processes sharing the connections (default 1)")
    limit.add_arguments(p, "the highest rate the target sustains", "--max-rate", limit.DEFAULT_SLOS)
    req = p.add_argument_group("request")
    req.add_argument("-m", "--method", help="HTTP method (default GET, or POST with a body)")
    req.add_argument(
        "-H", "--header", action="append", default=[], metavar="'NAME: VALUE'", help="add a header; repeatable"
    )
    body = req.add_mutually_exclusive_group()
    body.add_argument("-d", "--data", help="request body")
    body.add_argument("--data-file", metavar="FILE", help="request body from a file")
    req.add_argument(
        "--message",
        metavar="TEXT|@FILE",
        help=f"WebSocket: the message each exchange sends, or @FILE for a file's bytes (default {DEFAULT_MESSAGE!r})",
    )
    req.add_argument("--binary", action="store_true", help="WebSocket: send the message as binary, not text")
    req.add_argument("--name", help="stats name of the endpoint (default: the URL's path and query)")
    req.add_argument(
        "--timeout",
        type=str,
        default="30s",
        help="per-request timeout, connect included; for an event stream, the longest wait for its next bytes "
        "(default 30s)",
    )
    req.add_argument("--insecure", action="store_true", help="do not verify TLS certificates")
    req.add_argument("--http2", action="store_true", help="use HTTP/2 (ALPN over TLS, prior knowledge over http)")
    req.add_argument(
        "--h2-streams", type=str, default="1", help="HTTP/2: concurrent streams per connection (default 1)"
    )
    req.add_argument("--no-keepalive", action="store_true", help="a new connection for every request")
    add_output_arguments(p, "write Locust-format PREFIX_stats.csv, _stats_history.csv, _failures.csv, _exceptions.csv")
    live.add_arguments(p.add_argument_group("dashboard"), default_port=None, autoquit=True)
    add_threshold_arguments(p)
    monitor.add_arguments(p)
    distributed.add_arguments(p)
    p.set_defaults(func=run)
    return p


# What a WebSocket exchange sends when no --message is given.
DEFAULT_MESSAGE = "squall"


def is_websocket(url: str) -> bool:
    return urlsplit(url).scheme.lower() in ("ws", "wss")


def _message(args: argparse.Namespace) -> bytes:
    """A WebSocket run's message (`--message TEXT` or `@FILE`); the HTTP flags it cannot take are refused."""
    for flag, given in [
        ("-d/--data", args.data is not None),
        ("--data-file", args.data_file is not None),
        ("-m/--method", args.method is not None),
        ("--http2", args.http2),
        ("--no-keepalive", args.no_keepalive),
    ]:
        if given:
            raise UsageError(f"{flag} is for http:// and https:// URLs; a WebSocket sends --message")
    text: str = DEFAULT_MESSAGE if args.message is None else args.message
    path = inputs.at_file(text)
    data = _read(path, f"--message '{text}'") if path is not None else text.encode()
    if not args.binary:
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            raise UsageError("a text message must be UTF-8: give --binary to send these bytes") from None
    return data


def _headers(raw: list[str]) -> list[tuple[str, str]]:
    headers = []
    for h in raw:
        name, sep, value = h.partition(":")
        if not sep or not name.strip():
            raise UsageError(f"invalid header '{h}' (use 'Name: value')")
        headers.append((name.strip(), value.strip()))
    return headers


def _body(args: argparse.Namespace) -> bytes:
    data: str | None = args.data
    if data is not None:
        return data.encode()
    if args.data_file is not None:
        return _read(args.data_file, f"--data-file '{args.data_file}'")
    return b""


def _read(path: str, name: str) -> bytes:
    """A body or message from a file, at most inputs.MAX_SENT_FILE bytes (/dev/zero was read until memory
    ran out)."""
    try:
        return inputs.read_bytes(path, inputs.MAX_SENT_FILE, name)
    except inputs.InputError as e:
        raise UsageError(str(e)) from None


def _credentials(url: str, headers: list[tuple[str, str]]) -> tuple[str, list[tuple[str, str]]]:
    """`http://user:secret@host/`: the credentials go as basic authentication (as curl, requests and oha
    send them), unless an Authorization header is given, and the URL without them is what the engine,
    the console and the files see, so the password is never printed or saved."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url, headers
    userinfo, host = parts.netloc.rsplit("@", 1)
    user, _, password = userinfo.partition(":")
    if not any(k.lower() == "authorization" for k, _ in headers):
        token = base64.b64encode(f"{unquote(user)}:{unquote(password)}".encode()).decode()
        headers = [*headers, ("Authorization", f"Basic {token}")]
    return urlunsplit(parts._replace(netloc=host)), headers


def engine_config(args: argparse.Namespace) -> tuple[dict[str, Any], bytes]:
    """The engine's configuration (a dict for JSON) and the request body (a WebSocket's message), from
    parsed arguments."""
    websocket = is_websocket(args.url)
    if not websocket and (args.message is not None or args.binary):
        raise UsageError("--message and --binary are for ws:// and wss:// URLs; an HTTP request sends -d")
    body = _message(args) if websocket else _body(args)
    requests = to_positive_int(args.requests) if args.requests else None
    duration = to_duration(args.duration) if args.duration else None
    if requests is None and duration is None:
        requests = 200
    connections = to_positive_int(args.connections)
    rate = to_rate(args.rate) if args.rate else None
    if requests is not None and rate is None:
        connections = min(connections, requests)  # more would never send anything
    url, headers = _credentials(args.url, _headers(args.header))
    config = {
        "url": url,
        "method": "WS" if websocket else (args.method or ("POST" if body else "GET")),
        "headers": headers,
        "name": args.name,
        "connections": connections,
        "requests": requests,
        "duration": duration,
        "rate": rate,
        "arrival": args.arrival,
        "ramp": to_duration(args.ramp) if args.ramp else None,
        "timeout": to_duration(args.timeout),
        "insecure": args.insecure,
        "http2": args.http2,
        "h2_streams": to_positive_int(args.h2_streams),
        "keepalive": not args.no_keepalive,
        "binary": args.binary,
        "threads": to_positive_int(args.threads) if args.threads else None,
    }
    return config, body


def run(args: argparse.Namespace) -> int:
    live.check_autoquit(args)
    if args.find_limit:
        return find_limit(args)
    distributed.check(args)
    config, body = engine_config(args)
    worker = processes.worker()
    if worker is not None:  # a worker of a distributed run: its share; the driver reports
        return _work(shares.bench_share(config, worker), body)
    sent = [args.data_file, inputs.at_file(args.message)]
    outputs.check_writable(json=args.json, csv=args.csv, html=args.html, read=sent)
    args.thresholds, watch = thresholds.from_args(args)
    target_monitor = monitor.Monitor.from_args(args)
    limits.ensure_open_files(config["connections"])
    n = to_positive_int(args.processes) if args.processes else 1
    if n > 1:  # local workers, each its share (as distributed ones); the tables come at the end
        if args.ray or args.web_port is not None:
            raise UsageError("--processes goes without --ray (use --workers) and without --web-port")
        shares.check_workers(n, config["connections"], "connections")
        args.processes = n
        return processes.run_processes(args, config["connections"], _final_output(watch), "connections")
    dashboard = None
    if args.web_port is not None:  # before the run: a port in use is a usage error, not a lost run
        controls = {"start": False, "users": False, "stop": True, "reset": not args.ray}
        dashboard = live.start(args, "bench", "http", args.url, controls=controls, load=_load(config))
    if distributed.requested(args):
        # Ray's side (the driver, its roles and actors) loads only for a distributed run: 0.04 CPU-s
        # of imports that a local `squall bench` never uses (for start-up).
        from squall.distributed import runs

        end = functools.partial(finish, args=args, watch=watch)
        return runs.run_bench(args, config, dashboard, watch, target_monitor, end, _load(config))
    rss_start = generator.resident()
    engine_run = _start(config, body)
    if engine_run is None:
        return exitcodes.CANNOT_START
    line = ProgressLine(config) if not args.quiet and sys.stderr.isatty() else None
    partial = live.partial_files(args.json, "http", args.url, _load(config))
    with deferred():  # a second Ctrl-C waits for the outputs
        result, signum = drive(engine_run, line, dashboard, partial, watch, target_monitor, rss_start)
        code = finish(result, signum, args, watch)
        if partial is not None:
            partial.done()
    if dashboard is not None:
        live.serve_the_end(dashboard, result, args.autoquit, signum)
    return code


def _start(config: dict[str, Any], body: bytes) -> _engine.Run | None:
    """The engine's run of `config`; None when the target cannot be reached (said on stderr)."""
    try:
        return _engine.Run.bench(config, body)
    except _engine.UsageError as e:
        raise UsageError(str(e)) from None
    except _engine.TargetError as e:
        sys.stderr.write(f"squall bench: error: {e}\n")
        return None


def _work(config: dict[str, Any], body: bytes) -> int:
    """A worker of a distributed run (squall.distributed): its share of the load, its live feed to its
    actor, its result in SQUALL_WORKER_RESULT; nothing printed but errors."""
    wait_for_start()
    engine_run = _start(config, body)
    if engine_run is None:
        return exitcodes.CANNOT_START
    feed = worker_feed(engine_run.progress)
    with deferred():  # a second Ctrl-C waits for the result
        result, signum = drive(engine_run, partial=feed)
        processes.write_result(result)
    if feed is not None:
        feed.done()
    if signum is not None:
        return exitcodes.stopped_by(signum)
    agg = result["aggregate"]
    return exitcodes.ALL_FAILED if agg["requests"] == agg["failures"] else exitcodes.OK


def _load(config: dict[str, Any]) -> dict[str, Any]:
    """The load as the result's `load` will describe it, for the dashboard until the result exists."""
    return {
        "model": "open" if config["rate"] else "closed",
        "connections": config["connections"],
        "requests": config["requests"],
        "duration_s": config["duration"],
        "rate": config["rate"],
        "http2": config["http2"],
    }


def _final_output(watch: thresholds.Watch | None) -> Callable[[dict[str, Any], argparse.Namespace], None]:
    """`finish` for `--processes`, which picks the exit code itself."""

    def final_output(result: dict[str, Any], args: argparse.Namespace) -> None:
        finish(result, None, args, watch)

    return final_output


def finish(
    result: dict[str, Any], signum: int | None, args: argparse.Namespace, watch: thresholds.Watch | None = None
) -> int:
    """Prints the summary and the thresholds' verdicts (with the exit code when it is not theirs),
    writes the requested files, and returns the exit code."""
    # Judged first: its stop_reason ("threshold" when --threshold-abort stopped the run) is the summary's.
    verdicts = thresholds.judge(result, getattr(args, "thresholds", []), watch)
    sys.stdout.write(console.summary(result))
    sys.stdout.flush()
    print_observations(result)
    code, why = exit_code(result, signum, verdicts)
    outputs.write_and_say(
        result,
        json_path=args.json,
        csv_prefix=args.csv,
        full_history=args.csv_full_history,
        html_path=args.html,
        html_meta=page.meta("bench", getattr(args, "argv", None) or [], args.url),
    )
    thresholds.say(verdicts, code, why)  # (after the files: one that could not be written is its code)
    if code == exitcodes.ALL_FAILED:
        sys.stderr.write(f"squall bench: error: {why}\n")
    return code


def exit_code(result: dict[str, Any], signum: int | None, verdicts: list[thresholds.Verdict]) -> tuple[int, str]:
    """The run's exit code and why (docs/numbers.md's table): a signal, a failed threshold, nothing completed
    (no request, and no event of a stream still open at the end) or every request failed, else 0."""
    agg = result["aggregate"]
    if signum is not None:
        return exitcodes.stopped_by(signum), exitcodes.stopped_why(signum)
    if thresholds.failed(verdicts):
        return exitcodes.THRESHOLDS, "a threshold failed"
    if agg["requests"] == 0 and agg.get("events"):  # streams still open at the end sent events: measured
        return exitcodes.OK, ""
    if agg["requests"] == 0:  # nothing came back at all: not a success
        in_flight = f" ({result['abandoned']:,} still in flight when it ended)" if result["abandoned"] else ""
        return exitcodes.ALL_FAILED, f"no request completed{in_flight}"
    if agg["failures"] == agg["requests"]:
        top = result["errors"][0]["message"] if result["errors"] else "failed"
        return exitcodes.ALL_FAILED, f"every request failed (most often: {top})"
    return exitcodes.OK, ""


def find_limit(args: argparse.Namespace) -> int:
    """`--find-limit`: a closed-model probe for the scale, then open-model steps (`squall.limit`), each
    with the connections Little's law asks for (`limit.ConnectionPlan`), -c's at least."""
    refuse_load_flags([("-n", args.requests), ("-t", args.duration), ("--rate", args.rate), ("--ramp", args.ramp)])
    if args.web_port is not None or args.threshold or args.ray:
        raise UsageError("--find-limit takes --slo, not --threshold; and no --web-port or --ray yet")
    args.duration = args.step_time
    config, body = engine_config(args)
    limits.ensure_open_files(config["connections"])
    plan = limit.ConnectionPlan(config["connections"], limits.most_connections())

    def settle(result: dict[str, Any]) -> None:
        """Requests still queued at the target when a step ended would slow the next one down: wait
        the time the target needs to serve them at the rate it just showed (at most 10 s)."""
        done = result["aggregate"]["requests"] / max(result["duration_s"], 1e-9)
        if result["abandoned"]:
            time.sleep(min(10.0, result["abandoned"] / max(done, 1.0)) + 0.2)

    def start(rate: float | None, hold: float, connections: int | None) -> _engine.Run:
        connections = connections or config["connections"]
        limits.ensure_open_files(connections)
        step = dict(config, rate=rate, duration=hold, requests=None, connections=connections)
        return _engine.Run.bench(step, body)

    return find_limit_by_rate(
        args,
        "bench",
        args.url,
        start,
        lambda r, rate, slos, connections: limit.judge(r, rate, slos, connections, fastest_us=plan.fastest),
        "req/s",
        limit.DEFAULT_SLOS,
        lambda slo_texts, hold: (
            f"Finding the limit of {config['method']} {config['url']}: SLO {', '.join(slo_texts)}; "
            f"{hold:g} s a step; connections as each rate needs them (Little's law), from {plan.floor:,} "
            f"up to {plan.budget:,}"
        ),
        after_step=settle,
        plan=plan,
        connections=config["connections"],
    )

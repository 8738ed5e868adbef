"""`squall demo`: the built-in target on 127.0.0.1 and a short bench against it, a WebSocket run against
its echo, streamed chat completions of its simulated language model (time to first token, inter-token
latency, tokens a second), then MQTT devices publishing to the embedded broker with every message's
delivery checked."""

from __future__ import annotations

import argparse
import json
import shlex
import signal
import sys
import threading
from typing import TYPE_CHECKING, Callable

from squall import _engine, exitcodes
from squall.commands import bench, mqtt
from squall.load_values import port
from squall.options.arguments import Parser

if TYPE_CHECKING:
    from squall.options.arguments import Subcommands


def add_parser(commands: Subcommands) -> argparse.ArgumentParser:
    p = commands.add_parser(
        "demo",
        help="bench the built-in target, its WebSocket echo, its simulated LLM, then an MQTT run against its broker",
        description="Start the built-in target on 127.0.0.1 and bench it for 10 s, then its WebSocket echo, then "
        "its simulated language model's streamed chat completions, then publish to the embedded MQTT broker with "
        "delivery verified.",
    )
    p.add_argument("--port", type=port, default=0, help="the target's port (default: a free one)")
    p.add_argument("-t", "--duration", default="10s", help="how long the demo bench runs (default 10s)")
    p.add_argument("-c", "--connections", default="20", help="connections (default 20)")
    p.add_argument("--ws-duration", default="3s", help="how long the WebSocket part runs (default 3s)")
    p.add_argument("--no-ws", action="store_true", help="skip the WebSocket part")
    p.add_argument("--llm-duration", default="3s", help="how long the simulated LLM part runs (default 3s)")
    p.add_argument("--no-llm", action="store_true", help="skip the simulated LLM part")
    p.add_argument("--mqtt-duration", default="5s", help="how long the MQTT part publishes (default 5s)")
    p.add_argument("--no-mqtt", action="store_true", help="skip the MQTT part")
    p.add_argument("--serve", action="store_true", help="only serve the target (and the MQTT broker) until Ctrl-C")
    p.add_argument("--json", metavar="FILE", help="also write the JSON result")
    p.add_argument("--csv", metavar="PREFIX", help="also write the Locust-format CSV files")
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    try:
        target = _engine.DemoTarget(args.port)
    except _engine.TargetError as e:
        sys.stderr.write(f"squall demo: error: {e}\n")
        return exitcodes.CANNOT_START
    base = f"http://127.0.0.1:{target.port}"
    try:
        if args.serve:
            return _serve(base)
        sys.stderr.write(f"Demo target on {base} (endpoints: {', '.join(p for p, _ in target.endpoints())})\n")
        argv = [f"{base}/demo", "-c", args.connections, "-t", args.duration]
        argv += ["--json", args.json] if args.json else []
        argv += ["--csv", args.csv] if args.csv else []
        sys.stderr.write(f"Running: squall bench {shlex.join(argv)}\n\n")
        code = bench.run(_parse(bench.add_parser, "bench", argv))
        if code not in (exitcodes.OK, exitcodes.ALL_FAILED):
            return code
        if not args.no_ws:
            ws = [f"ws://127.0.0.1:{target.port}/ws", "-c", args.connections, "-t", args.ws_duration]
            ws += ["--message", '{"op": "ping"}']
            sys.stderr.write(f"\nThe target's WebSocket echo\nRunning: squall bench {shlex.join(ws)}\n\n")
            code = bench.run(_parse(bench.add_parser, "bench", ws)) or code
        if not args.no_llm:
            code = _llm(base, args) or code
        if args.no_mqtt:
            return code
        return _mqtt(args) or code
    finally:
        target.stop()


# A chat completion streamed by the target's simulated model: 32 tokens, the usage chunk asked for.
CHAT = {
    "model": "squall-demo",
    "messages": [{"role": "user", "content": "How did the load test go?"}],
    "stream": True,
    "max_tokens": 32,
    "stream_options": {"include_usage": True},
}


def _llm(base: str, args: argparse.Namespace) -> int:
    """The target's simulated model (/v1/chat/completions): the first token 200 ms after the request,
    each next 20 ms later, so that the summary's tokens block has numbers to read against those."""
    llm = [f"{base}/v1/chat/completions?ttft_ms=200&itl_ms=20", "-m", "POST", "-c", "10", "-t", args.llm_duration]
    llm += ["-H", "Content-Type: application/json", "-d", json.dumps(CHAT)]
    shown = shlex.join(llm)
    sys.stderr.write("\nThe target's simulated language model (first token 200 ms, then one each 20 ms)\n")
    sys.stderr.write(f"Running: squall bench {shown}\n\n")
    return bench.run(_parse(bench.add_parser, "bench", llm))


def _parse(add_parser: Callable[[Subcommands], object], name: str, argv: list[str]) -> argparse.Namespace:
    """`squall NAME ARGV` parsed as the command line would (the command's own parser and defaults)."""
    parser = Parser(prog="squall")
    add_parser(parser.add_subparsers(dest="command", parser_class=Parser))
    return parser.parse_args([name, *argv])


def _mqtt(args: argparse.Namespace) -> int:
    """50 devices at 20 msg/s each, QoS 1, delivery verified, against the embedded broker."""
    try:
        port = _engine.start_demo_broker()
    except _engine.TargetError as e:
        sys.stderr.write(f"squall demo: error: {e}\n")
        return exitcodes.CANNOT_START
    argv = [
        "--broker",
        f"mqtt://127.0.0.1:{port}",
        "-u",
        "50",
        "--rate",
        "20",
        "-t",
        args.mqtt_duration,
        "--qos",
        "1",
        "--verify",
        "--topic",
        "demo/{client}/telemetry",
    ]
    sys.stderr.write(f"\nDemo MQTT broker (rumqttd) on 127.0.0.1:{port}\nRunning: squall mqtt {shlex.join(argv)}\n\n")
    return mqtt.run(_parse(mqtt.add_parser, "mqtt", argv))


def _serve(base: str) -> int:
    print(f"Serving the demo target on {base} until Ctrl-C. Endpoints:")
    for path, what in _engine.DemoTarget.endpoints():
        print(f"  {base}{path:<22} {what}")
    print(f"MQTT broker (rumqttd) on mqtt://127.0.0.1:{_engine.start_demo_broker()}")
    sys.stdout.flush()
    done = threading.Event()
    for s in (signal.SIGINT, signal.SIGTERM):
        signal.signal(s, lambda *_: done.set())
    while not done.wait(0.5):
        pass
    return exitcodes.OK

"""WebSocket benchmark: `squall bench ws://` against the floor (bench/ws_floor.c), Artillery's ws engine and
Locust users on websocket-client, side by side in one run; squall's WebSocketUser in a locustfile
(bench/locustfiles/ws_user.py) beside Locust's users, scripted against scripted; and squall running Locust's
own file (bench/locustfiles/ws_echo.py, unchanged: its `import websocket` the engine's) beside Locust on it.

The built-in target's echo (crates/squall-target `/ws`: fastwebsockets over hyper 1, served alone by the
squall-target binary) pinned to core 0, each generator pinned to core 1; 50 connections, each sending the
message ("hello", a text frame) and waiting for its echo before the next, for 10 s; every generator once
per round, the order rotated each round. Messages are the server's own count (/ws/stats read before and
after each run), beside each generator's count. Reported: messages per CPU-second of the generator
(wait4's rusage, start-up included as for every peer), medians over the rounds; each generator's share of
the floor and squall's ratio to each peer, as medians of the per-round ratios with their ranges.

Then memory per idle connection: each generator asked for 10,000 connections against /ws?delay_ms=5000
(every echo 5 s late, so each connection waits with one message out) for 40 s, and again for a few; its
peak RSS with 10,000 minus its peak RSS with the few, over the connections added as the server counted
them (the most it had open at once, read while the run goes: what each generator really held).

A squall that refuses `squall bench ws://` (one older than it, or without the flags above) is skipped with
the reason it gave; the floor and the peers still run. Writes its section of RESULTS.md (not with --dry-run).

usage: python bench/ws_bench.py [--rounds 5] [--seconds 10] [--skip-install] [--connections 50]
       [--tools floor,squall,squall-script,squall-locustfile,artillery,locust] [--memory-connections 10000]
       [--memory-few 10] [--memory-seconds 40] [--memory-tools ...] [--no-memory] [--dry-run]
"""

import contextlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import urllib.request
from pathlib import Path

from common import BENCH, cli, headless, median, run_measured, write_section

ROOT = BENCH.parent
# squall as this interpreter runs it, or another command (SQUALL_BENCH_SQUALL, split on spaces: a squall
# of another checkout or virtualenv).
SQUALL = os.environ.get("SQUALL_BENCH_SQUALL", "").split() or [sys.executable, "-m", "squall"]
LOCUST = BENCH / ".venv-locust" / "bin" / "locust"
ARTILLERY = BENCH / "artillery" / "node_modules" / ".bin" / "artillery"
MARK = "## WebSocket: `squall bench ws://` against the floor, Artillery and Locust"
MESSAGE = "hello"
TOOLS = ("floor", "squall", "squall-script", "squall-locustfile", "artillery", "locust")
# The memory run's: connections held by a bench (a script's users are the same connections, plus Python).
MEMORY_TOOLS = ("floor", "squall", "artillery", "locust")
NAMES = {
    "floor": "floor (ws_floor.c)",
    "squall": "squall",
    "squall-script": "squall WebSocketUser (locustfile)",
    "squall-locustfile": "squall on Locust's file (ws_echo.py)",
    "artillery": "Artillery ws engine",
    "locust": "Locust + websocket-client",
}
# Artillery's local runs make a worker thread per core but one (lib/platform/local), whatever taskset allows.
ARTILLERY_WORKERS = max(1, (os.cpu_count() or 2) - 1)
IDLE_DELAY_MS = 5000  # the memory run's echo delay: each connection waits this long with its message out


def more_files():
    """The descriptor limit raised to the hard limit, for this process and so for every child (the target
    and the generators at 10,000 connections), as mqtt_bench.py does for mosquitto."""
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def target_binary():
    """The squall-target binary (crates/squall-target/src/bin), built with the workspace's release profile."""
    subprocess.run(["cargo", "build", "-q", "--release", "--locked", "-p", "squall-target"], cwd=ROOT, check=True)
    return Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target")) / "release" / "squall-target"


class PinnedTarget:
    """The built-in target alone (its `squall-target` binary) pinned to `core`; /ws is its echo."""

    def __init__(self, binary, core=0):
        self.proc = subprocess.Popen(
            ["taskset", "-c", str(core), binary, "0"],
            stdout=subprocess.PIPE,
            text=True,
            preexec_fn=more_files,
        )
        self.port = int(self.proc.stdout.readline())
        self.base = f"http://127.0.0.1:{self.port}"

    def url(self, path="/ws"):
        return f"ws://127.0.0.1:{self.port}{path}"

    def stats(self):
        """{"open", "opened", "messages"}: the server's counts so far."""
        with urllib.request.urlopen(f"{self.base}/ws/stats", timeout=10) as r:
            return json.loads(r.read())

    def settled(self, timeout=15):
        """The counts once the connections a generator left have closed and two readings 0.2 s apart agree
        (after a generator exits, the server may still be echoing what it had read)."""
        last, deadline = None, time.monotonic() + timeout
        while time.monotonic() < deadline:
            s = self.stats()
            if s == last and s["open"] == 0:
                return s
            last = s
            time.sleep(0.2)
        return last

    def stop(self):
        self.proc.terminate()
        self.proc.wait(10)


def build_floor(directory):
    """bench/ws_floor.c compiled into `directory`, as script_bench.py builds floor.c."""
    binary = Path(directory) / "ws_floor"
    subprocess.run([os.environ.get("CC", "cc"), "-O2", "-o", binary, BENCH / "ws_floor.c"], check=True)
    return binary


def failed(tool, code, out):
    raise RuntimeError(f"{tool} exited {code}:\n{out[-2000:]}")


def floor_run(target, conns, secs, path, tmp, timeout, started=None):
    out, cpu, rss, code = run_measured(
        [tmp / "ws_floor", target.port, conns, secs, path, MESSAGE], core=1, timeout=timeout, started=started
    )
    if code != 0:
        failed("the floor", code, out)
    r = json.loads(out.strip().splitlines()[-1])  # it fails on any failure: none to count
    return {"messages": r["messages"], "failures": 0, "cpu": cpu, "rss": rss}


def squall_command(target, conns, secs, path, out):
    url = target.url(path)
    return [*SQUALL, "bench", url, "-c", conns, "-t", f"{secs}s", "--message", MESSAGE, "-q", "--json", out]


def squall_run(target, conns, secs, path, tmp, timeout, started=None):
    result = tmp / "squall.json"
    result.unlink(missing_ok=True)
    out, cpu, rss, code = run_measured(
        squall_command(target, conns, secs, path, result), core=1, timeout=timeout, started=started
    )
    if code not in (0, 1):  # 1: some exchanges failed, counted below
        failed("squall", code, out)
    agg = json.loads(result.read_text())["aggregate"]
    return {"messages": agg["requests"] - agg["failures"], "failures": agg["failures"], "cpu": cpu, "rss": rss}


def squall_refusal(target, tmp):
    """None when `squall bench ws://` runs (one connection for 1 s, its result read), else squall's reason."""
    result = tmp / "probe.json"
    p = subprocess.run(
        [str(c) for c in squall_command(target, 1, 1, "/ws", result)], capture_output=True, text=True, timeout=120
    )
    if p.returncode in (0, 1) and result.exists():
        try:
            if json.loads(result.read_text())["aggregate"]["requests"] > 0:
                return None
        except (ValueError, KeyError):
            pass
    lines = (p.stderr + p.stdout).strip().splitlines()
    return f"exit {p.returncode}: {lines[-1] if lines else 'no output'}"


def artillery_run(target, conns, secs, path, tmp, timeout, started=None):
    report = tmp / "artillery.json"
    env = dict(
        os.environ,
        BENCH_USERS=str(conns),
        BENCH_SECONDS=str(secs),
        BENCH_MESSAGE=MESSAGE,
        ARTILLERY_DISABLE_TELEMETRY="true",
    )
    out, cpu, rss, code = run_measured(
        [ARTILLERY, "run", "--target", target.url(path), "--output", report, BENCH / "artillery" / "ws_echo.yml"],
        core=1,
        env=env,
        timeout=timeout,
        started=started,
    )
    if code != 0:
        failed("artillery", code, out)
    counters = json.loads(report.read_text())["aggregate"]["counters"]
    # Its failures: errors.* (timeouts, failed matches, lost connections) and virtual users that failed.
    errors = sum(v for k, v in counters.items() if k.startswith("errors."))
    return {
        "messages": counters.get("websocket.messages_received", 0),
        "failures": errors + counters.get("vusers.failed", 0),
        "cpu": cpu,
        "rss": rss,
    }


def locust_run(target, conns, secs, path, tmp, timeout, started=None):
    prefix = tmp / "locust"
    out, cpu, rss, code = run_measured(
        headless(
            [LOCUST],
            BENCH / "locustfiles" / "ws_echo.py",
            conns,
            secs,
            "--host",
            target.url(path),
            "--json-file",
            prefix,
            "--only-summary",
            "--loglevel",
            "WARNING",
        ),
        core=1,
        env=dict(os.environ, BENCH_MESSAGE=MESSAGE),
        timeout=timeout,
        started=started,
    )
    if code not in (0, 1):
        failed("locust", code, out)
    # Its final stats (--json-file writes PREFIX.json once every user has stopped; the CSV files are those
    # of Locust's last write, every second: 0.3-1.5 k exchanges short of its own summary in 3 s runs).
    stats = json.loads(Path(f"{prefix}.json").read_text())
    requests, failures = sum(e["num_requests"] for e in stats), sum(e["num_failures"] for e in stats)
    return {"messages": requests - failures, "failures": failures, "cpu": cpu, "rss": rss}


def squall_file_run(file, what, target, conns, secs, path, tmp, timeout, started):
    """squall running bench/locustfiles/FILE headless; its result document, CPU and peak RSS."""
    result = tmp / f"squall-{file}.json"
    result.unlink(missing_ok=True)
    command = headless(SQUALL, BENCH / "locustfiles" / file, conns, secs, "-H", target.url(path))
    command += ["--result-json", result, "--only-summary"]
    out, cpu, rss, code = run_measured(
        command, core=1, env=dict(os.environ, BENCH_MESSAGE=MESSAGE), timeout=timeout, started=started
    )
    if code not in (0, 1):
        failed(what, code, out)
    return json.loads(result.read_text()), cpu, rss


def exchanges_of(r, method):
    """(requests, failures) of the result's `method` rows: the exchanges."""
    rows = [e for e in r["endpoints"] if e["method"] == method]
    return sum(e["requests"] for e in rows), sum(e["failures"] for e in rows)


def squall_script_run(target, conns, secs, path, tmp, timeout, started=None):
    """squall's WebSocketUser (bench/locustfiles/ws_user.py), the scripted peer of Locust's users."""
    args = (target, conns, secs, path, tmp, timeout, started)
    r, cpu, rss = squall_file_run("ws_user.py", "squall's WebSocketUser", *args)
    exchanges, failures = exchanges_of(r, "WSC")
    failures += sum(x["count"] for x in r["exceptions"])  # a reply other than the message
    return {"messages": exchanges - failures, "failures": failures, "cpu": cpu, "rss": rss}


def squall_locustfile_run(target, conns, secs, path, tmp, timeout, started=None):
    """squall running Locust's own file, bench/locustfiles/ws_echo.py, unchanged: its `import websocket` is
    squall's websocket-client on the engine (squall.contrib.websocket_client), its events the exchanges."""
    args = (target, conns, secs, path, tmp, timeout, started)
    r, cpu, rss = squall_file_run("ws_echo.py", "squall on ws_echo.py", *args)
    exchanges, failures = exchanges_of(r, "WS")
    return {"messages": exchanges - failures, "failures": failures, "cpu": cpu, "rss": rss}


RUNNERS = {
    "floor": floor_run,
    "squall": squall_run,
    "squall-script": squall_script_run,
    "squall-locustfile": squall_locustfile_run,
    "artillery": artillery_run,
    "locust": locust_run,
}


def peak_rss_mb(pid):
    """The process's peak RSS so far (VmHWM: its own, since its exec), in MB; None once it has exited."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return None


class Watch:
    """Read every 0.2 s while a run goes: the most connections the server had open at once, and the
    generator's peak RSS (/proc's VmHWM, its last reading before the generator exits: wait4's max RSS
    would count this Python process's RSS at the fork; see common.run_measured)."""

    def __init__(self, target):
        self.target, self.proc, self.open, self.rss = target, None, 0, None
        self.done = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def started(self, proc):
        self.proc = proc

    def run(self):
        while not self.done.wait(0.2):
            with contextlib.suppress(OSError):  # a reading missed while the server is busiest: the next counts
                self.open = max(self.open, self.target.stats()["open"])
            if self.proc is not None:
                self.rss = peak_rss_mb(self.proc.pid) or self.rss

    def stop(self):
        self.done.set()
        self.thread.join()


def measured(tool, target, conns, secs, path, tmp, watch=False):
    """One run of `tool`; its counts, with the server's: the messages it echoed meanwhile and, with
    `watch`, the most connections it had open at once and the generator's peak RSS (`Watch`)."""
    before = target.settled()
    w = Watch(target) if watch else None
    try:
        s = RUNNERS[tool](target, conns, secs, path, tmp, timeout=secs * 6 + 180, started=w and w.started)
    finally:
        if w:
            w.stop()
    after = target.settled()
    s["server_messages"] = after["messages"] - before["messages"]
    if w:
        s["peak_open"] = w.open
        s["rss"] = w.rss if w.rss is not None else s["rss"]  # a run too short to be read: wait4's
    return s


def start_up(target, tools, tmp):
    """{tool: CPU seconds of a run of one connection for 1 s whose echo takes 1 s}: one message, so about
    what the generator's start-up and shutdown cost, which every run of the rounds includes (Artillery's
    took 4.2-4.9 CPU-s on this machine, busy)."""
    fixed = {}
    for tool in tools:
        fixed[tool] = measured(tool, target, 1, 1, "/ws?delay_ms=1000", tmp)["cpu"]
        print(f"start-up {tool:9} a run of one message: {fixed[tool]:.2f} CPU-s", file=sys.stderr)
    return fixed


def throughput(target, tools, rounds, conns, secs, tmp):
    """{tool: [one run per round]}."""
    results = {t: [] for t in tools}
    for r in range(rounds if tools else 0):
        order = tools[r % len(tools) :] + tools[: r % len(tools)]  # who runs first (or last) rotates
        for tool in order:
            s = measured(tool, target, conns, secs, "/ws", tmp)
            results[tool].append(s)
            print(
                f"round {r + 1} {tool:9} server echoed {s['server_messages'] / secs:>9,.0f} msg/s, "
                f"{tool} counted {s['messages'] / secs:>9,.0f} msg/s, failed {s['failures']:,}; "
                f"{s['server_messages'] / s['cpu']:>9,.0f} msg/CPU-s",
                file=sys.stderr,
            )
            check(tool, s, conns)
    return results


def check(tool, s, conns):
    """Warns when a generator failed exchanges, or its count and the server's differ by more than the
    messages in flight when it stopped (one per connection)."""
    if s["failures"]:
        print(f"  WARNING: {tool} failed {s['failures']:,} exchanges", file=sys.stderr)
    if not 0 <= s["server_messages"] - s["messages"] <= conns:
        print(
            f"  WARNING: {tool} counted {s['messages']:,} echoes, the server echoed {s['server_messages']:,}",
            file=sys.stderr,
        )


def memory(binary, tools, many, few, secs, tmp):
    """{tool: {"few": run, "many": run}} against /ws?delay_ms=IDLE_DELAY_MS, a fresh server for each run."""
    path = f"/ws?delay_ms={IDLE_DELAY_MS}"
    out = {}
    for tool in tools:
        for label, conns in (("few", few), ("many", many)):
            target = PinnedTarget(binary)
            try:
                s = measured(tool, target, conns, secs, path, tmp, watch=True)
            except RuntimeError as e:  # a peer that cannot hold them: say so, go on
                s = {"error": str(e).splitlines()[0], "peak_open": None}
                print(f"memory {tool} {conns:,}: {s['error']}", file=sys.stderr)
            finally:
                target.stop()
            out.setdefault(tool, {})[label] = dict(s, connections=conns)
            if "error" not in s:
                print(
                    f"memory {tool:9} {conns:>6,} connections: peak RSS {s['rss']:,.1f} MB, the server saw "
                    f"{s['peak_open']:,} open at once, {s['server_messages']:,} echoed, {s['failures']:,} failed",
                    file=sys.stderr,
                )
    return out


def per_connection_kb(m):
    """(peak RSS with many - with few) / (connections the server saw open at once with many - with few), in
    KB (1,024 bytes): per connection held, whether or not the generator reached all it was asked for; None
    without both runs."""
    few, many = m.get("few", {}), m.get("many", {})
    if "rss" not in few or "rss" not in many or many["peak_open"] <= few["peak_open"]:
        return None
    return (many["rss"] - few["rss"]) * 1024 / (many["peak_open"] - few["peak_open"])


def fmt_range(values, digits=2):
    return f"**{median(values):.{digits}f}** ({min(values):.{digits}f}–{max(values):.{digits}f})"


def section(results, mem, refusal, args, fixed=None):
    per_cpu = lambda s: s["server_messages"] / s["cpu"]
    ran = [t for t in results if results[t]]
    lines = [
        MARK,
        "",
        "`make bench-ws` (bench/ws_bench.py): the built-in target's WebSocket echo (crates/squall-target `/ws`:",
        "fastwebsockets 0.10 over hyper 1, one worker thread; the squall-target binary) on core 0, the generator",
        f"on core 1, {args.connections} connections, each sending `{MESSAGE}` (a text frame) and waiting for its",
        f"echo before the next, for {args.seconds} s; {args.rounds} rounds, every generator once a round, the order",
        "rotated each round. The floor is bench/ws_floor.c: the handshakes, then one write of a masked frame",
        "and the reads of its echo per message, on epoll, nothing else. Peers: Artillery 2.0.34's ws engine",
        "(bench/artillery/ws_echo.yml: a `send` whose `match` waits for the echo, in a loop; run locally it",
        f"makes one worker thread per core but one, here {ARTILLERY_WORKERS}, all on core 1),",
        "Locust 2.47 users on websocket-client 1.9.2 (bench/locustfiles/ws_echo.py: send, recv, one",
        "`events.request` per exchange; one process, gevent). Messages are the server's count (/ws/stats),",
        "the same yardstick for all, each generator's own count beside it. Shares of the floor and squall's",
        "ratios are medians of the per-round ratios of messages per generator CPU-second (range in brackets).",
        "Each run's CPU includes the generator's start-up and shutdown, as in the other benchmarks; the last",
        "column is about what those cost: a run of one connection for 1 s whose one echo takes 1 s",
        "(/ws?delay_ms=1000), once before the rounds.",
        "",
        "| generator | msg/s (server's count) | msg/s (its own count) | failures | msg per CPU-s "
        "| share of the floor | squall's msg per CPU-s to its | CPU-s of a run of one message |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    floor = results.get("floor") or []
    squall = results.get("squall") or []
    secs = args.seconds
    for tool in ran:
        runs = results[tool]
        shares = [per_cpu(a) / per_cpu(b) for a, b in zip(runs, floor)]
        share = fmt_range(shares, 3 if median(shares or [1]) < 0.1 else 2) if floor else "—"  # 0.005, not 0.00
        ratio = "—"  # squall's to itself, or to the floor: its share, beside
        if squall and tool not in ("squall", "floor"):
            r = [per_cpu(a) / per_cpu(b) for a, b in zip(squall, runs)]
            ratio = f"**{median(r):.1f}x** ({min(r):.1f}–{max(r):.1f})"
        lines.append(
            f"| {NAMES[tool]} | {median([s['server_messages'] / secs for s in runs]):,.0f} "
            f"| {median([s['messages'] / secs for s in runs]):,.0f} | {sum(s['failures'] for s in runs):,} "
            f"| {median([per_cpu(s) for s in runs]):,.0f} | {share} | {ratio} "
            f"| {f'{fixed[tool]:.2f}' if fixed and tool in fixed else '—'} |"
        )
    script, locust = results.get("squall-script") or [], results.get("locust") or []
    if script and locust:
        r = [per_cpu(a) / per_cpu(b) for a, b in zip(script, locust)]
        lines += [
            "",
            f"Scripted users against scripted users: squall's WebSocketUser (bench/locustfiles/ws_user.py, one "
            f"`self.ws.exchange` a task) to Locust's (ws_echo.py), in messages per CPU-second: "
            f"**{median(r):.1f}x** ({min(r):.1f}–{max(r):.1f}).",
        ]
    same = results.get("squall-locustfile") or []
    if same and locust:
        r = [per_cpu(a) / per_cpu(b) for a, b in zip(same, locust)]
        lines += [
            "",
            f"The same file, bench/locustfiles/ws_echo.py, run by squall (its `websocket` the engine's) and by "
            f"Locust (websocket-client), in messages per CPU-second: **{median(r):.1f}x** ({min(r):.1f}–{max(r):.1f}).",
        ]
    if refusal:
        lines += ["", f"squall: not measured, `squall bench ws://` was refused ({refusal})."]
    lines += [
        "",
        "Targets (issue 40): squall at least 0.6 of the floor and ahead of every peer.",
    ]
    if mem:
        lines += [
            "",
            "### Memory per idle connection",
            "",
            *textwrap.wrap(
                f"Each generator against /ws?delay_ms={IDLE_DELAY_MS} (every echo {IDLE_DELAY_MS / 1000:g} s late: "
                f"each connection waits with one message out) for {args.memory_seconds} s, with "
                f"{args.memory_connections:,} connections and with {args.memory_few}, a fresh server for each run; "
                "per connection: the peak RSS of the large run less the small run's (VmHWM, read every 0.2 s), over "
                "the connections added, as the server counted them. Held: the most connections the server had open "
                "at once during the large run (a generator that holds fewer than it was asked for did not open "
                "the rest in the run's time).",
                width=110,
            ),
            "",
            "| generator | connections asked | held (server) | peak RSS, few | peak RSS, many | KB per connection |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        for tool, m in mem.items():
            few, many = m.get("few", {}), m.get("many", {})
            kb = per_connection_kb(m)
            rss = lambda s: f"{s['rss']:,.1f} MB" if "rss" in s else f"failed: {s.get('error', '?')}"
            held = f"{many['peak_open']:,}" if many.get("peak_open") is not None else "—"
            lines.append(
                f"| {NAMES[tool]} | {args.memory_connections:,} | {held} | {rss(few)} | {rss(many)} "
                f"| {'—' if kb is None else f'**{kb:.1f}**'} |"
            )
        if refusal and "squall" not in mem:
            lines += ["", "squall: not measured (its WebSocket bench was refused, above)."]
        lines += [
            "",
            "Target (issue 40): under 10 KB per open idle connection. One public report of k6's websockets module:",
            "385 MiB for 10,000 connections, about 39 KB each.",
        ]
    return [*lines, ""]


def main():
    def more(ap):
        ap.add_argument("--connections", type=int, default=50, help="connections of the throughput rounds")
        ap.add_argument("--tools", default=",".join(TOOLS), help="the generators of the throughput rounds")
        ap.add_argument("--memory-connections", type=int, default=10_000, help="the connections of the memory run")
        ap.add_argument("--memory-few", type=int, default=10, help="the memory run's baseline connections")
        ap.add_argument("--memory-seconds", type=int, default=40, help="how long each memory run lasts")
        ap.add_argument("--memory-tools", default=",".join(MEMORY_TOOLS), help="the generators of the memory run")
        ap.add_argument("--no-memory", action="store_true", help="skip the memory run")
        ap.add_argument("--dry-run", action="store_true", help="print the section, leave RESULTS.md alone")

    args = cli(__doc__, more)
    more_files()
    binary = target_binary()
    tools = [t for t in args.tools.split(",") if t]
    memory_tools = [] if args.no_memory else [t for t in args.memory_tools.split(",") if t]
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        build_floor(tmp)
        target = PinnedTarget(binary)
        try:
            refusal = squall_refusal(target, tmp) if "squall" in tools + memory_tools else None
            if refusal:
                print(f"squall skipped: `squall bench ws://` was refused ({refusal})", file=sys.stderr)
                tools = [t for t in tools if t != "squall"]
                memory_tools = [t for t in memory_tools if t != "squall"]
            fixed = start_up(target, tools, tmp)
            results = throughput(target, tools, args.rounds, args.connections, args.seconds, tmp)
        finally:
            target.stop()
        mem = memory(binary, memory_tools, args.memory_connections, args.memory_few, args.memory_seconds, tmp)
    lines = section(results, mem, refusal, args, fixed)
    if args.dry_run:
        print("\n".join(lines))
    else:
        write_section(lines)


if __name__ == "__main__":
    main()

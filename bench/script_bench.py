"""Scripted-user benchmark: the same locustfile run by `squall -f` and by Locust, one process each, beside
Goose 0.19 (bench/goose: the same user scripted in Rust) and the floor (bench/floor.c).

nginx (one worker, `return 200`) on core 0, the generator on core 1, every generator once per round;
squall's ratio to Locust is the median of the per-round ratios of requests per CPU-second.
- without think time: 50 users with `constant(0)` for 10 s (FastHttpUser and HttpUser files);
- with think time: 1,000 FastHttpUser users with `between(0.1, 0.2)` for 10 s (at most 6,667 req/s);
- whole runs of that think-time file as long as our users run theirs (`--long`, 100 s: the seeds' headless
  runs are 100 s and 300 s), the floor's and squall's alternated: start-up and shutdown included, as in
  the 10 s rows, but at the share of a run they have in a user's;
- 10,000 users with `between(1, 2)` in one squall process: its RSS, its achieved rate against the
  theoretical 10,000 / 1.5 = 6,667 req/s, and the CPU it spends for it once all users run.
Goose (crates.io `goose` 0.19, the Locust-like load tester whose users are scripted in Rust; built by
bench/peers.sh) runs the same users in every round: one transaction `GET /` with the file's think time.
Beside them, in the same rounds, bench/floor.c: the same users doing only the socket work (a write and
the reads per request, nothing else), which is the most requests per CPU-second any generator can
reach here, so its ratio to Locust is the ceiling of squall's.
With SQUALL_BENCH_AB_GEVENT=1 each round also runs squall without gevent's patching of the standard
library (LOCUST_SKIP_MONKEY_PATCH=1: squall's own gevent stand-in, blocking libraries not cooperative),
and the section says what the patching costs squall per CPU-second.
Appends its section to RESULTS.md.

The files people write (bench/locustfiles/shop*.py: URLs built per call, response checks, JSON bodies,
an auth header; no native plan applies) have a section of their own, run first (`people`); `--people`
runs only that.

usage: python bench/script_bench.py [--rounds 5] [--seconds 10] [--long 100] [--people] [--skip-install]
"""

import csv
import os
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

from common import BENCH, PinnedNginx, cli, headless, median, run_measured, write_section

SQUALL = [sys.executable, "-m", "squall"]
LOCUST = os.environ.get("SQUALL_BENCH_LOCUST") or BENCH / ".venv-locust" / "bin" / "locust"
GOOSE = BENCH / "goose" / "target" / "release" / "goose-bench"
MARK = "## Scripted users: `squall -f` against Locust"


def aggregated_requests(prefix):
    rows = list(csv.DictReader(open(f"{prefix}_stats.csv")))
    return int(float(rows[-1]["Request Count"]))


AB_GEVENT = bool(os.environ.get("SQUALL_BENCH_AB_GEVENT"))
# squall as it runs the files (their users native: tasks that are requests only run in the engine),
# squall with every task in Python (SQUALL_NATIVE_TASKS=0), and without gevent's patching (AB_GEVENT).
SQUALLS = ("squall", "squall-python", "squall-nogevent")


def command(tool, flavour, url, users, secs, prefix):
    """The headless run of bench/locustfiles/FLAVOUR.py by squall or Locust, all users started at once."""
    tool_argv = SQUALL if tool in SQUALLS else [LOCUST]
    file = BENCH / "locustfiles" / f"{flavour}.py"
    return headless(tool_argv, file, users, secs, "-H", url.rstrip("/"), "--csv", prefix, "--only-summary")


def run_once(tool, flavour, url, users, secs, tmp):
    prefix = tmp / f"{tool}-{flavour}"
    cmd = command(tool, flavour, url, users, secs, prefix)
    if tool == "locust":
        cmd += ["--loglevel", "WARNING"]
    env = {
        "squall-nogevent": dict(os.environ, LOCUST_SKIP_MONKEY_PATCH="1"),
        "squall-python": dict(os.environ, SQUALL_NATIVE_TASKS="0"),
    }.get(tool)
    out, cpu, rss, code = run_measured(cmd, core=1, env=env, timeout=secs * 4 + 60)
    if code not in (0, 1):
        raise RuntimeError(f"{tool} {flavour} exited {code}:\n{out[-2000:]}")
    n = aggregated_requests(prefix)
    return {"requests": n, "cpu": cpu, "rss": rss, "rps": n / secs}


# The files' wait_time (bench/locustfiles/FLAVOUR.py); shop* are the files people write (`people`).
THINK = {
    "fasthttp": (0, 0),
    "httpuser": (0, 0),
    "think": (0.1, 0.2),
    "between": (1, 2),
    "shop": (0, 0),
    "shop_httpuser": (0, 0),
    "shop_think": (0.1, 0.2),
}


def build_floor(directory):
    """bench/floor.c compiled into `directory`; returns the binary's path."""
    binary = Path(directory) / "floor"
    cc = os.environ.get("CC", "cc")
    subprocess.run([cc, "-O2", "-o", binary, BENCH / "floor.c"], check=True)
    return binary


def run_floor(binary, port, flavour, users, secs):
    """One run of the floor with the locustfile's users and think time; requests, CPU and rate."""
    low, high = THINK[flavour]
    out, cpu, rss, code = run_measured([binary, port, users, low, high, secs], core=1, timeout=secs * 4 + 60)
    if code != 0:
        raise RuntimeError(f"floor exited {code}: {out[-2000:]}")
    n = int(out.split()[-1])
    return {"requests": n, "cpu": cpu, "rss": rss, "rps": n / secs}


def goose_command(url, flavour, users, secs):
    """Goose's command and environment for the locustfile's users and think time: all users started at
    once, its metrics kept from the first request, the number of requests its last line."""
    cmd = [GOOSE, "--host", url.rstrip("/"), "--users", users, "--increase-rate", users, "--run-time", f"{secs}s"]
    cmd += ["-q", "--no-print-metrics", "--no-reset-metrics"]
    return cmd, dict(os.environ, GOOSE_WAIT=",".join(map(str, THINK[flavour])))


def run_goose(url, flavour, users, secs):
    """One run of Goose (`goose_command`); requests, CPU and rate."""
    cmd, env = goose_command(url, flavour, users, secs)
    out, cpu, rss, code = run_measured(cmd, core=1, env=env, timeout=secs * 4 + 60)
    if code != 0:
        raise RuntimeError(f"goose exited {code}: {out[-2000:]}")
    n = int(out.split()[-1])
    return {"requests": n, "cpu": cpu, "rss": rss, "rps": n / secs}


TOOLS = ("squall", "squall-python", "locust", "floor", "goose")  # every round runs each


def run_tool(tool, flavour, users, secs, nginx, floor, tmp):
    """One run of any generator on the file's users and think time; requests, CPU and rate."""
    if tool == "floor":
        return run_floor(floor, nginx.port, flavour, users, secs)
    if tool == "goose":
        return run_goose(nginx.url, flavour, users, secs)
    return run_once(tool, flavour, nginx.url, users, secs, Path(tmp))


@contextmanager
def pinned_target():
    """nginx on core 0, a scratch directory, and the floor built in it: what every round needs."""
    nginx = PinnedNginx(core=0)
    try:
        with tempfile.TemporaryDirectory() as d:
            yield nginx, build_floor(d), d
    finally:
        nginx.stop()


def throughput(rounds, secs, users=50, flavours=("fasthttp", "httpuser")):
    results = {}
    with pinned_target() as (nginx, floor, d):
        for r in range(rounds):
            for flavour in flavours:
                for tool in (*TOOLS, *(("squall-nogevent",) if AB_GEVENT else ())):
                    if tool in ("floor", "goose") and flavour == "httpuser":
                        continue  # the same user as fasthttp's, measured once a round
                    s = run_tool(tool, flavour, users, secs, nginx, floor, d)
                    results.setdefault((tool, flavour), []).append(s)
                    print(
                        f"round {r + 1} {tool:15} {flavour:9} {s['rps']:>9,.0f} req/s "
                        f"{s['requests'] / s['cpu']:>9,.0f} req/CPU-s",
                        file=sys.stderr,
                    )
    return results


STEADY = (4, 14)  # the two run lengths (s) whose difference is a run's steady state (`steady`)

# The length of a whole run as users run theirs: the seeds' headless runs (shared/seeds) are 100 s and
# 300 s long. A 10 s run is a benchmark's length: squall's start-up and shutdown (the interpreter, the
# imports, gevent's patching, 1,000 Python users made, 0.35 CPU-s together) are a fifth of its CPU there
# and a fortieth in a 100 s run; the floor's are about nothing at either length.
LONG = 100


def steady(rounds, flavour="think", users=1000):
    """Each generator's requests per CPU-second once running: the difference of a 14 s and a 4 s run's CPU
    over the difference of their requests, so that start-up and shutdown (imports, making 1,000 users and
    their connections, writing the files) cancel out, for every generator alike; the same rounds."""
    results = {}
    with pinned_target() as (nginx, floor, d):
        for r in range(rounds):
            for tool in TOOLS:
                short, long = (run_tool(tool, flavour, users, secs, nginx, floor, d) for secs in STEADY)
                s = {"requests": long["requests"] - short["requests"], "cpu": long["cpu"] - short["cpu"]}
                results.setdefault(tool, []).append(s)
                rate = s["requests"] / s["cpu"]
                print(f"round {r + 1} steady {tool:15} {rate:>9,.0f} req/CPU-s", file=sys.stderr)
    return results


def long_runs(rounds, secs, flavour="think", users=1000):
    """Whole runs of `secs` (`LONG`) of the think-time file by the floor and by squall, alternated (the
    first of a round switches each round); their requests per CPU-second, start-up and shutdown included."""
    results = {"secs": secs, "floor": [], "squall": []}
    with pinned_target() as (nginx, floor, d):
        for r in range(rounds):
            for tool in ("floor", "squall") if r % 2 == 0 else ("squall", "floor"):
                s = run_tool(tool, flavour, users, secs, nginx, floor, d)
                results[tool].append(s)
                rate = s["requests"] / s["cpu"]
                print(f"round {r + 1} {secs} s {tool:15} {rate:>9,.0f} req/CPU-s", file=sys.stderr)
    return results


def cpu_seconds(pid):
    """User + system CPU seconds of a process so far (its threads included)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def many_users(users=10_000, secs=40, settle=10):
    """10,000 users with between(1, 2): squall's RSS, its rate once all are running, and the CPU it spent
    from the `settle`-th second to 5 s before the end (read from /proc while it runs); the floor's CPU
    over the same window of its own run."""
    nginx = PinnedNginx(core=0)
    try:
        with tempfile.TemporaryDirectory() as d:
            prefix = Path(d) / "many"
            cmd = command("squall", "between", nginx.url, users, secs, prefix)
            share, usage, _ = core_share(cmd, secs, settle)
            rss = usage.ru_maxrss / 1024.0
            history = list(csv.DictReader(open(f"{prefix}_stats_history.csv")))
            floor_share, _, out = core_share([build_floor(d), nginx.port, users, *THINK["between"], secs], secs, settle)
    finally:
        nginx.stop()
    # The seconds from `settle` to the run's last whole one: the seconds after the run's time, while its
    # users stop, carry no requests (they read as 0 and cut the rate: 83% where it held 99%).
    steady = [float(h["Requests/s"]) for h in history[settle : secs - 1]]
    return {
        "users": users,
        "rss_mb": rss,
        "rate": sum(steady) / len(steady),
        "seconds": len(steady),
        "theory": users / 1.5,
        "core_share": share,
        "floor_share": floor_share,
        "floor_rate": int(out.split()[-1]) / secs,
    }


def core_share(cmd, secs, settle):
    """Runs `cmd` on core 1; the share of a core it used from the `settle`-th second to 5 s before the
    end, its rusage, and its output."""
    t0 = time.monotonic()
    with tempfile.TemporaryFile("w+") as output:  # a file, not a pipe: nothing blocks on a full pipe
        proc = subprocess.Popen(["taskset", "-c", "1", *map(str, cmd)], stdout=output)
        time.sleep(settle)
        c0, w0 = cpu_seconds(proc.pid), time.monotonic()
        time.sleep(secs - settle - 5)
        c1, w1 = cpu_seconds(proc.pid), time.monotonic()
        _, status, usage = os.wait4(proc.pid, 0)
        output.seek(0)
        out = output.read()
    assert time.monotonic() - t0 < secs * 3 + 60, "the run took too long"
    assert os.waitstatus_to_exitcode(status) in (0, 1), f"{cmd[0]} failed: {out[-2000:]}"
    return (c1 - c0) / (w1 - w0), usage, out


def write(results, think, many, rounds, secs, steady_think, long=None):
    per_cpu = lambda s: s["requests"] / s["cpu"]
    results = {**results, **think}

    def ratios(tool, flavour, own_flavour):
        r = [per_cpu(x) / per_cpu(y) for x, y in zip(results[(tool, own_flavour)], results[("locust", flavour)])]
        return f"**{median(r):.1f}x** ({min(r):.1f}–{max(r):.1f})"

    def against(tool, flavour, peer, peer_flavour):
        """squall's requests per CPU-second over a peer's, per round: median (range)."""
        r = [per_cpu(x) / per_cpu(y) for x, y in zip(results[(tool, flavour)], results[(peer, peer_flavour)])]
        return f"**{median(r):.2f}** ({min(r):.2f}–{max(r):.2f})"

    def row(label, flavour, floor_flavour, tool="squall"):
        sq, lo, fl = results[(tool, flavour)], results[("locust", flavour)], results[("floor", floor_flavour)]
        go = results.get(("goose", floor_flavour))
        return (
            f"| {label} | {median([s['rps'] for s in sq]):,.0f} | {median([per_cpu(s) for s in sq]):,.0f} | "
            f"{median([s['rps'] for s in lo]):,.0f} | {median([per_cpu(s) for s in lo]):,.0f} | "
            f"{ratios(tool, flavour, flavour)} | {median([per_cpu(s) for s in fl]):,.0f} | "
            f"{ratios('floor', flavour, floor_flavour)} | {against(tool, flavour, 'floor', floor_flavour)} | "
            + (
                f"{median([per_cpu(s) for s in go]):,.0f} | {against(tool, flavour, 'goose', floor_flavour)} |"
                if go
                else "– | – |"
            )
        )

    header = [
        "| locustfile | squall req/s | squall req per CPU-s | Locust req/s | Locust req per CPU-s "
        "| squall ratio, req per CPU-s | floor req per CPU-s | floor ratio: the ceiling | squall's share of the floor "
        "| Goose req per CPU-s | squall ÷ Goose |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    lines = [
        MARK,
        "",
        "`make bench` (bench/script_bench.py): the same locustfile (one task, one `GET /`, `wait_time = constant(0)`)",
        f"run by `squall -f` and by Locust {LOCUST_VERSION}, one process each, 50 users, {secs} s, "
        "generator on core 1,",
        f"nginx on core 0, {rounds} rounds. Ratios: median of the per-round ratios (range in brackets). The floor",
        "(bench/floor.c, in the same rounds) is the same users doing nothing but the socket work, a write and the",
        "reads per request, in C: the most requests per CPU-second any generator reaches on this host, so its",
        "ratio to Locust is the ceiling of squall's (HttpUser's row divides FastHttpUser's floor by its Locust).",
        "Goose 0.19 (bench/goose, the same user scripted in Rust, all users started at once, its metrics kept from",
        "the first request) runs in the same rounds; HttpUser's row compares with that one Goose user.",
        "The files' users are native (python/squall/user/native.py: a task that is only requests with fixed",
        'arguments runs in the engine, no Python per request); the rows "tasks in Python" are the same files',
        "run by squall with `SQUALL_NATIVE_TASKS=0` in the same rounds: what any other task costs.",
        "",
        *header,
        row("FastHttpUser", "fasthttp", "fasthttp"),
        row("HttpUser", "httpuser", "fasthttp"),
        row("FastHttpUser, tasks in Python", "fasthttp", "fasthttp", "squall-python"),
        row("HttpUser, tasks in Python", "httpuser", "fasthttp", "squall-python"),
        "",
        f"With think time: 1,000 FastHttpUser users with `between(0.1, 0.2)` (at most 6,667 req/s), {secs} s, "
        "same setup:",
        "",
        *header,
        row("FastHttpUser, `between(0.1, 0.2)`", "think", "think"),
        row("FastHttpUser, `between(0.1, 0.2)`, tasks in Python", "think", "think", "squall-python"),
        "",
        f"The same users once running (`steady`: the difference of a {STEADY[1]} s and a {STEADY[0]} s run of each",
        "generator, CPU over requests, so that start-up and shutdown cancel out for all alike; same rounds):",
        "",
        "| generator | req per CPU-s once running | share of the floor | ÷ Goose | ÷ Locust |",
        "|---|---:|---:|---:|---:|",
        *steady_rows(steady_think),
        "",
        *long_lines(long),
        f"{many['users']:,} users with `between(1, 2)` in one squall process: **{many['rss_mb']:.0f} MB** max RSS "
        f"(target: under 1 GB); {many['rate']:,.0f} req/s over {many['seconds']} s once all were running, "
        f"{100 * many['rate'] / many['theory']:.1f}% of the theoretical {many['theory']:,.0f} req/s, on "
        f"**{100 * many['core_share']:.0f}% of one core** (target: under 20%). The floor with the same users: "
        f"{100 * many['floor_share']:.0f}% of a core ({many['floor_rate']:,.0f} req/s).",
        "",
    ]
    if ("squall-nogevent", "fasthttp") in results:  # SQUALL_BENCH_AB_GEVENT: what gevent's patching costs
        ab = {
            flavour: [
                per_cpu(a) / per_cpu(b)
                for a, b in zip(results[("squall", flavour)], results[("squall-nogevent", flavour)])
            ]
            for flavour in ("fasthttp", "httpuser", "think")
        }
        lines += [
            "squall with gevent's patching of the standard library (its default under `-f`, as Locust's) against",
            "squall without it (`LOCUST_SKIP_MONKEY_PATCH=1`), requests per CPU-second in the same rounds: "
            + ", ".join(f"{k} **{median(v):.2f}x** ({min(v):.2f}-{max(v):.2f})" for k, v in ab.items())
            + ".",
            "",
        ]
    write_section(lines)


def steady_rows(steady_think):
    per_cpu = lambda s: s["requests"] / s["cpu"]
    names = {"squall": "squall (native users)", "squall-python": "squall, tasks in Python", "locust": "Locust"}
    names |= {"floor": "floor", "goose": "Goose 0.19"}

    def against(tool, peer):
        r = [per_cpu(x) / per_cpu(y) for x, y in zip(steady_think[tool], steady_think[peer])]
        return f"**{median(r):.2f}** ({min(r):.2f}–{max(r):.2f})"

    return [
        f"| {names[tool]} | {median([per_cpu(s) for s in runs]):,.0f} | {against(tool, 'floor')} | "
        f"{against(tool, 'goose')} | {against(tool, 'locust')} |"
        for tool, runs in steady_think.items()
    ]


def long_lines(long):
    """The whole runs as long as users run theirs (`long_runs`), if measured."""
    if not long:
        return []
    per_cpu = lambda s: s["requests"] / s["cpu"]
    floor, squall, secs = long["floor"], long["squall"], long["secs"]
    share = [per_cpu(q) / per_cpu(f) for f, q in zip(floor, squall)]
    requests = {tool: f"{median([s['requests'] for s in runs]):,.0f}" for tool, runs in (("f", floor), ("q", squall))}
    return [
        f"Whole runs as long as the seeds' (`--long`: {secs} s; their headless runs are 100 s and 300 s), the same",
        f"1,000 users `between(0.1, 0.2)`, the floor's and squall's alternated, {len(share)} rounds: start-up and",
        "shutdown counted as in the 10 s rows, at the share of a run they have in a user's.",
        "",
        "| generator | requests a run | req per CPU-s | share of the floor |",
        "|---|---:|---:|---:|",
        f"| squall (native users) | {requests['q']} | {median([per_cpu(s) for s in squall]):,.0f} | "
        f"**{median(share):.2f}** ({min(share):.2f}–{max(share):.2f}) |",
        f"| floor | {requests['f']} | {median([per_cpu(s) for s in floor]):,.0f} | 1.00 |",
        "",
    ]


PEOPLE_MARK = "## Scripted users: the file people write, against the floor and Locust"
# (flavour, users, what the row says)
PEOPLE = (
    ("shop", 50, "shop.py, FastHttpUser, 50 users `constant(0)`"),
    ("shop_httpuser", 50, "shop_httpuser.py, HttpUser, 50 users `constant(0)`"),
    ("shop_think", 1000, "shop_think.py, FastHttpUser, 1,000 users `between(0.1, 0.2)`"),
)


def people(rounds, secs):
    """The files people write (bench/locustfiles/shop*.py: several tasks, URLs built per call with a
    random id and `name=`, catch_response checks, JSON posted and read, an auth header from on_start),
    run by squall and Locust, beside the floor with the same users and think time, every generator once
    a round, the first of a round switching each round. No native plan applies to them: every task runs
    in Python, as it should."""
    results = {}
    with pinned_target() as (nginx, floor, d):
        for r in range(rounds):
            order = [(f, users, tool) for f, users, _ in PEOPLE for tool in ("squall", "locust", "floor")]
            for flavour, users, tool in order if r % 2 == 0 else order[::-1]:
                s = run_tool(tool, flavour, users, secs, nginx, floor, d)
                results.setdefault((tool, flavour), []).append(s)
                rate = s["requests"] / s["cpu"]
                print(f"round {r + 1} {tool:8} {flavour:13} {rate:>9,.0f} req/CPU-s", file=sys.stderr)
    return results


def write_people(results, rounds, secs):
    per_cpu = lambda s: s["requests"] / s["cpu"]

    def ratio(a, b):
        r = [per_cpu(x) / per_cpu(y) for x, y in zip(a, b)]
        return f"**{median(r):.2f}** ({min(r):.2f}–{max(r):.2f})"

    rows = []
    for flavour, _, label in PEOPLE:
        sq, lo, fl = results[("squall", flavour)], results[("locust", flavour)], results[("floor", flavour)]
        rows.append(
            f"| {label} | {median([s['rps'] for s in sq]):,.0f} | {median([per_cpu(s) for s in sq]):,.0f} | "
            f"{median([per_cpu(s) for s in fl]):,.0f} | {ratio(sq, fl)} | "
            f"{median([per_cpu(s) for s in lo]):,.0f} | {ratio(sq, lo)} |"
        )
    lines = [
        PEOPLE_MARK,
        "",
        f"`bench/script_bench.py --people` ({rounds} rounds of {secs} s, nginx on core 0, each generator on core 1):",
        "locustfiles shaped like our users' (bench/locustfiles/shop.py, shop_httpuser.py, shop_think.py: several",
        "tasks, URLs built per call from a random id and grouped by `name=`, catch_response checks of the status and",
        "the text, JSON posted and `json()` read back, an auth header set in on_start), so that no native plan",
        "applies: every task runs in Python, the request in the engine. The floor (bench/floor.c) runs the same",
        f"users and think time doing only the socket work of a `GET /`; Locust {LOCUST_VERSION} runs the same file.",
        "Ratios: median of the per-round ratios of requests per CPU-second (range in brackets).",
        "",
        "| locustfile | squall req/s | squall req per CPU-s | floor req per CPU-s | squall's share of the floor "
        "| Locust req per CPU-s | squall ÷ Locust |",
        "|---|---:|---:|---:|---:|---:|---:|",
        *rows,
        "",
    ]
    write_section(lines)


LOCUST_VERSION = (BENCH / "requirements-locust.txt").read_text().split("locust==")[1].split()[0]


def flags(ap):
    ap.add_argument("--long", type=int, default=LONG, help="0: no long runs")
    ap.add_argument("--people", action="store_true", help="only the files people write (their own section)")


def main():
    args = cli(__doc__, flags)
    write_people(people(args.rounds, args.seconds), args.rounds, args.seconds)
    if args.people:
        return
    results = throughput(args.rounds, args.seconds)
    think = throughput(args.rounds, args.seconds, users=1000, flavours=("think",))
    steady_think = steady(args.rounds)
    long = long_runs(args.rounds, args.long) if args.long else None
    many = many_users()
    write(results, think, many, args.rounds, args.seconds, steady_think, long)


if __name__ == "__main__":
    main()

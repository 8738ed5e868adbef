"""What one scripted request costs each generator: CPU microseconds, system calls, waits in epoll and
context switches per request, and for squall the greenlet switches per request, side by side with the
floor (bench/floor.c) and Goose 0.19 (bench/goose) on the same workloads as bench/script_bench.py.

The machine this runs on is a VM without hardware counters (perf reads no instructions), so the CPU is
the process's own user+system time from wait4, the system calls and context switches perf's software
events and tracepoints (`perf stat -e raw_syscalls:sys_enter,syscalls:sys_enter_epoll_wait,...`), and the
greenlet switches greenlet's trace hook in a second, separate run (bench/counting/sitecustomize.py: the
hook slows the run, so its CPU is not used). Medians over the rounds; each round runs every generator once.

usage: python bench/per_request.py [--rounds 3] [--seconds 8] [--people] [--skip-install]
"""

import os
import sys
import tempfile
from pathlib import Path

import script_bench as sb
from common import BENCH, PinnedNginx, cli, median, run_measured, write_section

EVENTS = ("raw_syscalls:sys_enter", "syscalls:sys_enter_epoll_wait", "context-switches")
# (flavour, users): the one-task files.
WORKLOADS = (("fasthttp", 50), ("think", 1000))
# Where a generator has no such file: Goose's user is the one-task file's.
ONE_TASK = ("fasthttp", "think")
# `--people`: the file people write (bench/locustfiles/shop.py: no native plan applies, every task in
# Python; its floor is the same users' socket work), in a section of its own.
PEOPLE = (("shop", 50),)
PEOPLE_MARK = "## What a request of the file people write costs: CPU, system calls and switches"
IN_PYTHON = "squall (its tasks in Python: no native plan applies)"
MARK = "## What a scripted request costs: CPU, system calls and switches per request"
# squall as it runs the files (their users native: squall.user.native), and with every task in Python.
SQUALLS = ("squall", "squall-python")
NAMES = {"squall": "squall (native users)", "squall-python": "squall, tasks in Python (`SQUALL_NATIVE_TASKS=0`)"}


def perf_stat(cmd, out_file):
    """`cmd` under perf stat, counting EVENTS into `out_file` (CSV)."""
    return ["perf", "stat", "-x", ",", "-o", out_file, "-e", ",".join(EVENTS), "--", *map(str, cmd)]


def read_stat(out_file):
    counts = {}
    for line in Path(out_file).read_text().splitlines():
        fields = line.split(",")
        if len(fields) > 2 and fields[2] in EVENTS:
            counts[fields[2]] = int(fields[0]) if fields[0].isdigit() else 0
    return counts


def one(tool, flavour, users, secs, nginx, floor, tmp, switches=False):
    """One measured run of `tool`; a dict of per-request costs."""
    stat = tmp / f"{tool}.stat"
    env = dict(os.environ)
    if tool in SQUALLS:
        prefix = tmp / f"{tool}-{flavour}"
        cmd = sb.command("squall", flavour, nginx.url, users, secs, prefix)
        env["SQUALL_NATIVE_TASKS"] = "0" if tool == "squall-python" else "1"
        if switches:
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(BENCH / "counting"), env.get("PYTHONPATH")]))
            env["SQUALL_BENCH_SWITCHES"] = str(tmp / "switches")
    elif tool == "floor":
        cmd = [floor, nginx.port, users, *sb.THINK[flavour], secs]
    else:
        cmd, env = sb.goose_command(nginx.url, flavour, users, secs)
    out, cpu, _, code = run_measured(perf_stat(cmd, stat), core=1, env=env, timeout=secs * 4 + 60)
    if code not in (0, 1):
        raise RuntimeError(f"{tool} exited {code}: {out[-2000:]}")
    n = sb.aggregated_requests(prefix) if tool in SQUALLS else int(out.split()[-1])
    if switches:
        return int((tmp / "switches").read_text()) / n
    c = read_stat(stat)
    return {
        "requests": n,
        "cpu_us": 1e6 * cpu / n,
        "syscalls": c.get(EVENTS[0], 0) / n,
        "epoll_waits": c.get(EVENTS[1], 0) / n,
        "context_switches": c.get(EVENTS[2], 0) / n,
    }


def measure(rounds, secs, workloads=WORKLOADS):
    nginx = PinnedNginx(core=0)
    results = {}
    try:
        with tempfile.TemporaryDirectory() as d:
            tmp = Path(d)
            floor = sb.build_floor(d)
            for r in range(rounds):
                for flavour, users in workloads:
                    for tool in ("floor", *SQUALLS, "goose"):
                        if tool == "goose" and (not sb.GOOSE.exists() or flavour not in ONE_TASK):
                            continue
                        if tool == "squall-python" and flavour not in ONE_TASK:
                            continue  # (no native plan applies: squall runs it in Python already)
                        s = one(tool, flavour, users, secs, nginx, floor, tmp)
                        results.setdefault((flavour, tool), []).append(s)
                        print(
                            f"round {r + 1} {flavour:8} {tool:6} " + " ".join(f"{k} {v:,.2f}" for k, v in s.items()),
                            file=sys.stderr,
                        )
            for flavour, users in workloads:
                for tool in SQUALLS if flavour in ONE_TASK else ("squall",):
                    results[(flavour, "switches", tool)] = one(tool, flavour, users, secs, nginx, floor, tmp, True)
    finally:
        nginx.stop()
    return results


def table(results, workloads=WORKLOADS):
    lines = [
        "| workload | generator | CPU µs per request | system calls | of them epoll_wait | context switches "
        "| greenlet switches |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    labels = {
        "fasthttp": "50 users, `constant(0)`",
        "think": "1,000 users, `between(0.1, 0.2)`",
        "shop": "shop.py (the file people write), 50 users, `constant(0)`",
    }
    for flavour, _ in workloads:
        for tool in ("floor", *SQUALLS, "goose"):
            runs = results.get((flavour, tool))
            if not runs:
                continue
            m = {k: median([r[k] for r in runs]) for k in runs[0]}
            counted = results.get((flavour, "switches", tool))
            switches = f"{counted:.2f}" if counted is not None else ""
            name = NAMES.get(tool, tool) if flavour in ONE_TASK or tool == "floor" else IN_PYTHON
            lines.append(
                f"| {labels[flavour]} | {name} | {m['cpu_us']:.1f} | {m['syscalls']:.2f} "
                f"| {m['epoll_waits']:.2f} | {m['context_switches']:.3f} | {switches} |"
            )
    return lines


def main():
    args = cli(__doc__, lambda ap: ap.add_argument("--people", action="store_true", help="only shop.py, a section"))
    workloads = PEOPLE if args.people else WORKLOADS
    results = measure(args.rounds, args.seconds, workloads)
    lines = [
        PEOPLE_MARK if args.people else MARK,
        "",
        f"`make bench-script` (bench/per_request.py --rounds {args.rounds} --seconds {args.seconds}"
        f"{' --people' if args.people else ''}): the workloads of",
        "bench/script_bench.py, each generator on core 1 and nginx on core 0, medians of the rounds. CPU is the",
        "process's own (wait4), start-up included; system calls, epoll waits and context switches are perf's",
        "software events and tracepoints; greenlet switches greenlet's trace hook in a separate run (bench/counting).",
        "",
        *table(results, workloads),
        "",
    ]
    print("\n".join(lines))
    write_section(lines)


if __name__ == "__main__":
    main()

"""Scripted-user benchmark: the same locustfile run by `squall -f` and by Locust, one process each.

nginx (one worker, `return 200`) on core 0, the generator on core 1, every generator once per round;
squall's ratio to Locust is the median of the per-round ratios of requests per CPU-second.
- without think time: 50 users with `constant(0)` for 10 s (FastHttpUser and HttpUser files);
- with think time: 1,000 FastHttpUser users with `between(0.1, 0.2)` for 10 s (at most 6,667 req/s);
- 10,000 users with `between(1, 2)` in one squall process: its RSS, its achieved rate against the
  theoretical 10,000 / 1.5 = 6,667 req/s, and the CPU it spends for it once all users run.
Appends its section to RESULTS.md.

usage: python bench/script_bench.py [--rounds 5] [--seconds 10] [--skip-install]
"""

import csv
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import BENCH, PinnedNginx, cli, median, run_measured, write_section

SQUALL = [sys.executable, "-m", "squall"]
LOCUST = os.environ.get("SQUALL_BENCH_LOCUST") or BENCH / ".venv-locust" / "bin" / "locust"
MARK = "## Scripted users: `squall -f` against Locust"


def aggregated_requests(prefix):
    rows = list(csv.DictReader(open(f"{prefix}_stats.csv")))
    return int(float(rows[-1]["Request Count"]))


def command(tool, flavour, url, users, secs, prefix):
    """The headless run of bench/locustfiles/FLAVOUR.py by squall or Locust, all users started at once."""
    return [
        *(SQUALL if tool == "squall" else [LOCUST]),
        "-f",
        BENCH / "locustfiles" / f"{flavour}.py",
        "--headless",
        "-u",
        users,
        "-r",
        users,
        "-t",
        f"{secs}s",
        "-H",
        url.rstrip("/"),
        "--csv",
        prefix,
        "--only-summary",
    ]


def run_once(tool, flavour, url, users, secs, tmp):
    prefix = tmp / f"{tool}-{flavour}"
    cmd = command(tool, flavour, url, users, secs, prefix)
    if tool == "locust":
        cmd += ["--loglevel", "WARNING"]
    out, cpu, rss, code = run_measured(cmd, core=1, timeout=secs * 4 + 60)
    if code not in (0, 1):
        raise RuntimeError(f"{tool} {flavour} exited {code}:\n{out[-2000:]}")
    n = aggregated_requests(prefix)
    return {"requests": n, "cpu": cpu, "rss": rss, "rps": n / secs}


def throughput(rounds, secs, users=50, flavours=("fasthttp", "httpuser")):
    nginx = PinnedNginx(core=0)
    results = {}
    try:
        with tempfile.TemporaryDirectory() as d:
            for r in range(rounds):
                for flavour in flavours:
                    for tool in ("squall", "locust"):
                        s = run_once(tool, flavour, nginx.url, users, secs, Path(d))
                        results.setdefault((tool, flavour), []).append(s)
                        print(
                            f"round {r + 1} {tool:7} {flavour:9} {s['rps']:>9,.0f} req/s "
                            f"{s['requests'] / s['cpu']:>9,.0f} req/CPU-s",
                            file=sys.stderr,
                        )
    finally:
        nginx.stop()
    return results


def cpu_seconds(pid):
    """User + system CPU seconds of a process so far (its threads included)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def many_users(users=10_000, secs=40, settle=10):
    """10,000 users with between(1, 2): RSS, the rate once all are running, and the CPU spent from the
    `settle`-th second to 5 s before the end (read from /proc while it runs)."""
    nginx = PinnedNginx(core=0)
    try:
        with tempfile.TemporaryDirectory() as d:
            prefix = Path(d) / "many"
            cmd = command("squall", "between", nginx.url, users, secs, prefix)
            proc = subprocess.Popen(["taskset", "-c", "1", *map(str, cmd)], stdout=subprocess.DEVNULL)
            t0 = time.monotonic()
            time.sleep(settle)
            c0, w0 = cpu_seconds(proc.pid), time.monotonic()
            time.sleep(secs - settle - 5)
            c1, w1 = cpu_seconds(proc.pid), time.monotonic()
            _, status, usage = os.wait4(proc.pid, 0)
            rss = usage.ru_maxrss / 1024.0
            history = list(csv.DictReader(open(f"{prefix}_stats_history.csv")))
            assert time.monotonic() - t0 < secs * 3 + 60, "the run took too long"
    finally:
        nginx.stop()
    steady = [float(h["Requests/s"]) for h in history[settle:-1]]
    return {
        "users": users,
        "rss_mb": rss,
        "rate": sum(steady) / len(steady),
        "seconds": len(steady),
        "theory": users / 1.5,
        "core_share": (c1 - c0) / (w1 - w0),
    }


def engine_alone(rate, connections, secs=20):
    """The engine alone at a scripted run's request rate: `squall bench --rate R -c C --threads 1`, no
    Python in the loop; its CPU share and requests per CPU-second. Not a floor: bench's open model arms
    a timer and wakes for every arrival (strace: a timerfd_settime and a read per request besides the
    send and the receive), where the users' think-time timers fire together in millisecond buckets."""
    nginx = PinnedNginx(core=0)
    try:
        cmd = [*SQUALL, "bench", nginx.url, "--rate", rate, "-c", connections, "-t", f"{secs}s", "--threads", 1, "-q"]
        out, cpu, _, code = run_measured(cmd, core=1, timeout=secs * 3 + 60)
    finally:
        nginx.stop()
    assert code == 0, out
    return {"rate": rate, "connections": connections, "core_share": cpu / secs, "per_cpu": rate * secs / cpu}


def write(results, think, many, rounds, secs, alone):
    per_cpu = lambda s: s["requests"] / s["cpu"]
    lines = [
        MARK,
        "",
        "`make bench` (bench/script_bench.py): the same locustfile (one task, one `GET /`, `wait_time = constant(0)`)",
        f"run by `squall -f` and by Locust {LOCUST_VERSION}, one process each, 50 users, {secs} s, "
        "generator on core 1,",
        f"nginx on core 0, {rounds} rounds. Ratios: median of the per-round ratios (range in brackets).",
        "",
        "| locustfile | squall req/s | squall req per CPU-s | Locust req/s | Locust req per CPU-s "
        "| squall ratio, req per CPU-s |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for flavour, label in (("fasthttp", "FastHttpUser"), ("httpuser", "HttpUser")):
        sq, lo = results[("squall", flavour)], results[("locust", flavour)]
        ratios = [per_cpu(a) / per_cpu(b) for a, b in zip(sq, lo)]
        lines.append(
            f"| {label} | {median([s['rps'] for s in sq]):,.0f} | {median([per_cpu(s) for s in sq]):,.0f} | "
            f"{median([s['rps'] for s in lo]):,.0f} | {median([per_cpu(s) for s in lo]):,.0f} | "
            f"**{median(ratios):.1f}x** ({min(ratios):.1f}–{max(ratios):.1f}) |"
        )
    sq, lo = think[("squall", "think")], think[("locust", "think")]
    ratios = [per_cpu(a) / per_cpu(b) for a, b in zip(sq, lo)]
    lines += [
        "",
        f"With think time: 1,000 FastHttpUser users with `between(0.1, 0.2)` (at most 6,667 req/s), {secs} s, "
        "same setup:",
        "",
        "| locustfile | squall req/s | squall req per CPU-s | Locust req/s | Locust req per CPU-s "
        "| squall ratio, req per CPU-s |",
        "|---|---:|---:|---:|---:|---:|",
        f"| FastHttpUser, `between(0.1, 0.2)` | {median([s['rps'] for s in sq]):,.0f} | "
        f"{median([per_cpu(s) for s in sq]):,.0f} | {median([s['rps'] for s in lo]):,.0f} | "
        f"{median([per_cpu(s) for s in lo]):,.0f} | **{median(ratios):.1f}x** ({min(ratios):.1f}–{max(ratios):.1f}) |",
        "",
        f"{many['users']:,} users with `between(1, 2)` in one squall process: **{many['rss_mb']:.0f} MB** max RSS "
        f"(target: under 1 GB); {many['rate']:,.0f} req/s over {many['seconds']} s once all were running, "
        f"{100 * many['rate'] / many['theory']:.1f}% of the theoretical {many['theory']:,.0f} req/s, on "
        f"**{100 * many['core_share']:.0f}% of one core** (target: under 20%).",
        "",
        "For scale: the same request rates from the Rust engine alone, no Python in the loop (`squall bench "
        "--rate R -c C --threads 1`, pinned like the runs above). Not a floor: its open model wakes for every "
        "arrival at its intended time (a timer armed and read per request, besides the send and the receive), "
        "where the users' think-time timers fire together in millisecond buckets; what both pay is the kernel's "
        "loopback TCP, whose two ends' stacks run on the sender's core:",
        "",
        "| rate | connections | engine alone: share of a core | req per CPU-s |",
        "|---:|---:|---:|---:|",
        *[
            f"| {f['rate']:,} | {f['connections']:,} | {100 * f['core_share']:.0f}% | {f['per_cpu']:,.0f} |"
            for f in alone
        ],
        "",
    ]
    write_section(lines)


LOCUST_VERSION = (BENCH / "requirements-locust.txt").read_text().split("locust==")[1].split()[0]


def main():
    args = cli(__doc__)
    results = throughput(args.rounds, args.seconds)
    think = throughput(args.rounds, args.seconds, users=1000, flavours=("think",))
    alone = [engine_alone(6_667, 1_000), engine_alone(6_667, 10_000)]
    many = many_users()
    write(results, think, many, args.rounds, args.seconds, alone)


if __name__ == "__main__":
    main()

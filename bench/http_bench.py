"""HTTP benchmark: squall bench against wrk, oha, hey, ab and Locust, side by side in one run.

nginx (one worker, `return 200`) is pinned to core 0 and each generator to core 1; each makes 50
connections for 10 s. Each round runs every generator once, back to back, so squall and each peer are
compared within the round (this machine is shared: its speed drifts more between rounds than the
generators differ). Reported: req/s and CPU per request (medians over rounds), and squall's ratio to each
peer as the median of the per-round ratios, with their range. Then squall's memory with 10,000
concurrent keep-alive connections. Writes RESULTS.md.

usage: python bench/http_bench.py [--rounds 5] [--seconds 10] [--skip-install]
"""

import json
import os
import re
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

from common import BENCH, PinnedNginx, cli, headless, median, run_measured, write_section

SQUALL = [sys.executable, "-m", "squall"]
LOCUST = BENCH / ".venv-locust" / "bin" / "locust"
LOCUSTFILE = BENCH / "locustfiles" / "{kind}.py"


def parse(pattern, out):
    m = re.search(pattern, out)
    if not m:
        raise RuntimeError(f"cannot read the result from:\n{out[-2000:]}")
    return float(m.group(1).replace(",", ""))


def status_responses(out):
    """oha and hey: the sum of their status code distribution ("[200] 846105 responses")."""
    counts = [int(n) for n in re.findall(r"\[\d{3}\]\s+(\d+) responses", out)]
    if not counts:
        raise RuntimeError(f"cannot read the result from:\n{out[-2000:]}")
    return sum(counts)


def generators(url, conns, secs, tmp):
    """name -> (command, function(output) -> requests completed)."""
    squall_json = tmp / "squall.json"
    locust_csv = tmp / "locust"

    def squall_requests(_out):
        r = json.loads(squall_json.read_text())
        return r["aggregate"]["requests"]

    def locust_requests(_out):
        rows = Path(f"{locust_csv}_stats.csv").read_text().splitlines()
        return float(rows[-1].split(",")[2])

    def locust(kind):
        return (
            headless(
                [LOCUST],
                str(LOCUSTFILE).format(kind=kind),
                conns,
                secs,
                "--host",
                url.rstrip("/"),
                "--csv",
                locust_csv,
                "--only-summary",
                "--loglevel",
                "WARNING",
            ),
            locust_requests,
        )

    return {
        "squall": (
            [*SQUALL, "bench", url, "-c", conns, "-t", f"{secs}s", "-q", "--json", squall_json],
            squall_requests,
        ),
        "wrk": (["wrk", "-t1", f"-c{conns}", f"-d{secs}s", url], lambda o: parse(r"(\d+) requests in", o)),
        "oha": (["oha", "--no-tui", "-c", conns, "-z", f"{secs}s", url], status_responses),
        "hey": (["hey", "-c", conns, "-z", f"{secs}s", url], status_responses),
        "ab": (
            ["ab", "-k", "-q", "-c", conns, "-t", secs, "-n", 100_000_000, url],
            lambda o: parse(r"Complete requests:\s+(\d+)", o),
        ),
        "locust-fasthttp": locust("fasthttp"),
        "locust-httpuser": locust("httpuser"),
    }


def bench_throughput(rounds, secs, conns=50):
    nginx = PinnedNginx(core=0)
    results = {}
    try:
        with tempfile.TemporaryDirectory() as d:
            gens = generators(nginx.url, conns, secs, Path(d))
            for r in range(rounds):
                for name, (cmd, count) in gens.items():
                    out, cpu, rss, code = run_measured(cmd, core=1, timeout=secs * 4 + 60)
                    if code != 0:
                        raise RuntimeError(f"{name} exited {code}:\n{out[-2000:]}")
                    n = count(out)
                    results.setdefault(name, []).append({"requests": n, "cpu": cpu, "rps": n / secs})
                    print(
                        f"round {r + 1} {name:16} {n / secs:>10,.0f} req/s  {n / cpu:>10,.0f} req/CPU-s",
                        file=sys.stderr,
                    )
    finally:
        nginx.stop()
    return results


def bench_memory(conns=10_000, secs=10):
    nginx = PinnedNginx(core=0)
    try:
        with tempfile.TemporaryDirectory() as d:
            out_json = Path(d) / "mem.json"
            out, cpu, rss, code = run_measured(
                [*SQUALL, "bench", nginx.url, "-c", conns, "-t", f"{secs}s", "-q", "--json", out_json],
                core=1,
                timeout=secs * 4 + 60,
            )
            r = json.loads(out_json.read_text())
    finally:
        nginx.stop()
    return {
        "connections": conns,
        "rss_mb": rss,
        "opened": r["connect"]["requests"],
        "requests": r["aggregate"]["requests"],
        "failures": r["aggregate"]["failures"],
    }


def summarize(samples):
    rps = median([s["rps"] for s in samples])
    per_cpu = median([s["requests"] / s["cpu"] for s in samples])
    return rps, per_cpu


def round_ratios(squall, peer, metric):
    """squall ÷ peer in each round: (median, lowest, highest)."""
    ratios = [metric(a) / metric(b) for a, b in zip(squall, peer)]
    return median(ratios), min(ratios), max(ratios)


def fmt_ratio(r):
    mid, lo, hi = r
    return f"**{mid:.2f}x** ({lo:.2f}–{hi:.2f})"


def write_results(results, memory, rounds, secs):
    squall = results["squall"]
    lines = [
        "## HTTP: `squall bench` against wrk, oha, hey, ab and Locust",
        "",
        f"Measured {datetime.now(timezone.utc):%Y-%m-%d} by `make bench` (bench/http_bench.py) on this project's",
        f"machine ({os.cpu_count()} cores, shared). nginx 1 worker `return 200` pinned to core 0; each generator",
        f"pinned to core 1 with 50 connections for {secs} s; {rounds} rounds, every generator once per round.",
        "Ratios are squall ÷ peer within each round: the median of the rounds, and their range in brackets",
        "(above 1.00: squall is ahead). Both generators are pinned to the one core, so req/s is also the",
        "saturated rate on one core.",
        "",
        "| generator | req/s | CPU s per 10k req | req per CPU-s | squall ratio, req per CPU-s | squall ratio, req/s |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    per_cpu_metric = lambda s: s["requests"] / s["cpu"]
    rps_metric = lambda s: s["rps"]
    for name, samples in results.items():
        rps, per_cpu = summarize(samples)
        if name == "squall":
            ratio_cpu = ratio_rps = "—"
        else:
            ratio_cpu = fmt_ratio(round_ratios(squall, samples, per_cpu_metric))
            ratio_rps = fmt_ratio(round_ratios(squall, samples, rps_metric))
        lines.append(f"| {name} | {rps:,.0f} | {10_000 / per_cpu:.3f} | {per_cpu:,.0f} | {ratio_cpu} | {ratio_rps} |")
    lines += [
        "",
        "Locust runs the same task in both flavours: one `GET /` with `wait_time = constant(0)`,",
        "50 users in one process (bench/locustfiles/).",
        "",
        "### Memory: concurrent keep-alive connections",
        "",
        f"`squall bench -c {memory['connections']:,} -t 10s` against the same nginx: "
        f"**{memory['rss_mb']:.0f} MB** max RSS (target: under 300 MB), "
        f"{memory['opened']:,} connections opened, {memory['requests']:,} requests, {memory['failures']} failed.",
        "",
    ]
    write_section(lines)


def main():
    args = cli(__doc__)
    results = bench_throughput(args.rounds, args.seconds)
    memory = bench_memory()
    write_results(results, memory, args.rounds, args.seconds)


if __name__ == "__main__":
    main()

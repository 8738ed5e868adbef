"""HTTP/2 benchmark: `squall bench --http2` against h2load (nghttp2's reference HTTP/2 load generator).

nginx (one worker, `return 200`, TLS with HTTP/2) on core 0, each generator on core 1, for 10 s:
10 connections x 10 concurrent streams, then 10 connections x 1 stream. Every generator once per
round; squall's ratio to h2load is the median of the per-round ratios of requests per CPU-second.
Appends its section to RESULTS.md.

usage: python bench/h2_bench.py [--rounds 5] [--seconds 10] [--skip-install]
"""

import json
import re
import sys
import tempfile
from pathlib import Path

from common import PinnedNginx, cli, median, run_measured, write_section

SQUALL = [sys.executable, "-m", "squall"]
MARK = "## HTTP/2: `squall bench --http2` against h2load"
SHAPES = ((10, 10), (10, 1))  # (connections, streams per connection)


def run_once(tool, url, conns, streams, secs, tmp):
    if tool == "squall":
        out_json = tmp / "squall.json"
        cmd = [
            *SQUALL,
            "bench",
            url,
            "--http2",
            "--insecure",
            "-c",
            conns,
            "--h2-streams",
            streams,
            "-t",
            f"{secs}s",
            "-q",
            "--threads",
            1,
            "--json",
            out_json,
        ]
    else:
        cmd = ["h2load", "-c", conns, "-m", streams, "-D", secs, "-t", 1, url]
    out, cpu, _rss, code = run_measured(cmd, core=1, timeout=secs * 4 + 60)
    if code != 0:
        raise RuntimeError(f"{tool} exited {code}:\n{out[-2000:]}")
    if tool == "squall":
        n = json.loads(out_json.read_text())["aggregate"]["requests"]
    else:
        m = re.search(r"requests: \d+ total, \d+ started, \d+ done, (\d+) succeeded", out)
        if not m:
            raise RuntimeError(f"cannot read h2load's result:\n{out[-2000:]}")
        n = int(m.group(1))
    return {"requests": n, "cpu": cpu, "rps": n / secs}


def main():
    args = cli(__doc__)
    nginx = PinnedNginx(core=0, tls=True)
    results = {}
    try:
        with tempfile.TemporaryDirectory() as d:
            for r in range(args.rounds):
                for conns, streams in SHAPES:
                    for tool in ("squall", "h2load"):
                        s = run_once(tool, nginx.tls_url, conns, streams, args.seconds, Path(d))
                        results.setdefault((tool, conns, streams), []).append(s)
                        print(
                            f"round {r + 1} {tool:7} {conns}x{streams} {s['rps']:>9,.0f} req/s "
                            f"{s['requests'] / s['cpu']:>9,.0f} req/CPU-s",
                            file=sys.stderr,
                        )
    finally:
        nginx.stop()
    per_cpu = lambda s: s["requests"] / s["cpu"]
    lines = [
        MARK,
        "",
        f"`make bench` (bench/h2_bench.py): nginx (one worker, `return 200`, TLS + HTTP/2) on core 0, the generator "
        f"on core 1, {args.seconds} s, {args.rounds} rounds; h2load (nghttp2-client) with `-t 1`, squall with "
        "`--threads 1`. Ratios: median of the per-round ratios (range in brackets).",
        "",
        "| connections x streams | squall req/s | squall req per CPU-s | h2load req/s | h2load req per CPU-s "
        "| squall ratio, req per CPU-s |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for conns, streams in SHAPES:
        sq, h2 = results[("squall", conns, streams)], results[("h2load", conns, streams)]
        ratios = [per_cpu(a) / per_cpu(b) for a, b in zip(sq, h2)]
        lines.append(
            f"| {conns} x {streams} | {median([s['rps'] for s in sq]):,.0f} | {median([per_cpu(s) for s in sq]):,.0f} "
            f"| {median([s['rps'] for s in h2]):,.0f} | {median([per_cpu(s) for s in h2]):,.0f} "
            f"| **{median(ratios):.2f}x** ({min(ratios):.2f}–{max(ratios):.2f}) |"
        )
    lines.append("")
    write_section(lines)


if __name__ == "__main__":
    main()

"""Dashboard overhead: the same run headless and with its dashboard open.

nginx (one worker, `return 200`) and the page's client on core 0; the generator alone on core 1. The
client does what an open page does to the generator: it loads the page and its assets, then asks
/api/live once a second (a browser drawing on this 2-core machine would take its CPU from nginx).

Two measures, each run in both modes per round, the order alternating:
- the CPU the dashboard costs: the generator's CPU seconds (user + sys, from wait4) at a fixed offered
  load, page open against headless. At a fixed load the work is the same, so the difference is the
  dashboard's; a generator that saturates its core loses that fraction of its rate. Precise to a few
  tenths of a percent here, where saturated rates swing by 10-20% from one run to the next.
- the saturated rate itself (closed model, as fast as it goes), page open / headless: the issue's own
  measure, reported with its spread.
Runs: `squall bench` (`--rate 20000 -c 50` and `-c 50`) and `squall -f` (bench/locustfiles/fasthttp.py,
`--rate 8000 -u 50` and `-u 50` as fast as it goes).

usage: python bench/dashboard_bench.py [--rounds 5] [--seconds 10] [--skip-install]
"""

import json
import os
import subprocess
import sys
import threading
import time
import urllib.request

from common import BENCH, PinnedNginx, cli, free_port, median, write_section

SQUALL = [sys.executable, "-m", "squall"]
MARK = "## Dashboard overhead: a run with its page open against the same run headless"


def watch(port, stop):
    """Does what an open dashboard page does, from core 0: loads the page and its assets, then asks
    /api/live for the new seconds once a second. (A real browser would draw on core 0 too, where it
    takes CPU from nginx, not from the generator: the generator's side is these requests.)"""
    os.sched_setaffinity(0, {0})  # this thread only (Linux: the calling thread)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 20
    while not stop.is_set():
        try:
            for path in ("/", "/assets/app.js", "/assets/app.css"):
                urllib.request.urlopen(base + path, timeout=5).read()
            break
        except OSError:
            if time.monotonic() > deadline:
                return
            time.sleep(0.05)
    cursor = 0
    while not stop.wait(1.0):
        try:
            live = json.loads(urllib.request.urlopen(f"{base}/api/live?cursor={cursor}", timeout=5).read())
            cursor = live["cursor"]
        except OSError:
            return


def requests_done(out):
    for line in out.splitlines():
        line = line.strip()
        if line.startswith("Requests") and "total" in line:  # squall bench's summary
            return int(line.split()[1].replace(",", ""))
        if line.startswith("Aggregated") and "|" in line:  # Locust's table
            return int(line.split()[1])
    raise RuntimeError("no request count in:\n" + out[-2000:])


RATES = {"bench": 20_000, "script": 8_000}  # fixed offered loads, well below saturation on one core


def command(kind, url, secs, page, fixed, port):
    if kind == "bench":
        cmd = [*SQUALL, "bench", url, "-c", 50, "-t", f"{secs}s", "--threads", 1, "-q"]
        cmd += ["--rate", RATES[kind]] if fixed else []
        return cmd + (["--web-port", port, "--autoquit", "0"] if page else [])
    cmd = [*SQUALL, "-f", BENCH / "locustfiles" / "fasthttp.py", "-u", 50, "-r", 50, "-t", f"{secs}s"]
    cmd += ["-H", url.rstrip("/"), "--only-summary"] + (["--rate", RATES[kind]] if fixed else [])
    return cmd + (["--web-port", port, "--autostart", "--autoquit", "0"] if page else ["--headless"])


def run(kind, url, secs, page, fixed):
    """(requests per second, generator CPU seconds) of one run."""
    port = free_port()
    stop = threading.Event()
    watcher = threading.Thread(target=watch, args=(port, stop), daemon=True) if page else None
    proc = subprocess.Popen(
        ["taskset", "-c", "1", *map(str, command(kind, url, secs, page, fixed, port))],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    if watcher:
        watcher.start()
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    stop.set()
    if watcher:
        watcher.join(30)
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{kind} failed:\n{out[-2000:]}")
    return requests_done(out) / secs, usage.ru_utime + usage.ru_stime


def main():
    args = cli(__doc__)
    nginx = PinnedNginx(core=0)
    kinds = ("bench", "script")
    cpu = {(k, p): [] for k in kinds for p in (False, True)}  # CPU seconds at the fixed load
    extra = {k: [] for k in kinds}  # per round: (page - headless) CPU / run time, a fraction of a core
    sat = {(k, p): [] for k in kinds for p in (False, True)}
    ratios = {k: [] for k in kinds}
    try:
        for r in range(args.rounds):
            order = (False, True) if r % 2 == 0 else (True, False)
            for kind in kinds:
                fixed = {page: run(kind, nginx.url, args.seconds, page, True) for page in order}
                for page, (_, c) in fixed.items():
                    cpu[(kind, page)].append(c)
                extra[kind].append((fixed[True][1] - fixed[False][1]) / args.seconds)
                full = {page: run(kind, nginx.url, args.seconds, page, False)[0] for page in order}
                for page, rate in full.items():
                    sat[(kind, page)].append(rate)
                ratios[kind].append(full[True] / full[False])
                print(
                    f"round {r + 1} {kind}: CPU at {RATES[kind]:,}/s headless {fixed[False][1]:.2f} s, page "
                    f"{fixed[True][1]:.2f} s; saturated headless {full[False]:,.0f}/s, page {full[True]:,.0f}/s",
                    flush=True,
                )
    finally:
        nginx.stop()
    lines = [
        MARK,
        "",
        "`make bench` (bench/dashboard_bench.py): nginx and the page's client (it loads the page and its "
        "assets, then polls /api/live once a second, as an open page does) on core 0, the generator alone "
        f"on core 1, {args.seconds} s per run, {args.rounds} rounds, headless and page-open runs alternating "
        "in order. The dashboard's CPU: the generator's CPU seconds at a fixed offered load, page open minus "
        "headless, per second of run (median over rounds, range in brackets); a saturated generator loses "
        "that share of its rate. The saturated rates: median of the per-round ratios (range). Target: within 3%.",
        "",
        "| run | fixed load | CPU headless | CPU page open | dashboard's CPU, share of a core | saturated: "
        "headless req/s | page open req/s | ratio |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    names = {"bench": "`squall bench -c 50`", "script": "`squall -f` FastHttpUser, 50 users"}
    for k in kinds:
        e = extra[k]
        lines.append(
            f"| {names[k]} | {RATES[k]:,} req/s | {median(cpu[(k, False)]):.2f} s | {median(cpu[(k, True)]):.2f} s | "
            f"**{median(e) * 100:+.2f}%** ({min(e) * 100:+.2f}–{max(e) * 100:+.2f}) | "
            f"{median(sat[(k, False)]):,.0f} | {median(sat[(k, True)]):,.0f} | "
            f"{median(ratios[k]):.3f} ({min(ratios[k]):.3f}–{max(ratios[k]):.3f}) |"
        )
    write_section(lines)


if __name__ == "__main__":
    main()

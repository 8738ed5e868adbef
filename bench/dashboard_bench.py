"""Dashboard overhead: the same run headless and with its dashboard open in a browser.

nginx (one worker, `return 200`) and the browser (Debian's Chromium, driven by Playwright, polling the
page as a user's would) on core 0; the generator alone on core 1, so that what the dashboard costs the
run shows in the generator's own rate. Two runs, each in both modes per round, the order alternating:
- `squall bench URL -c 50` (closed model, as fast as it goes) with `--web-port`;
- `squall -f` (bench/locustfiles/fasthttp.py, 50 users, no think time) with its dashboard and
  `--autostart`.
The ratio is the median over rounds of (with the page) / (headless) in requests per second.

usage: python bench/dashboard_bench.py [--rounds 5] [--seconds 10] [--skip-install]
"""

import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from common import BENCH, PinnedNginx, cli, free_port, median, write_section

SQUALL = [sys.executable, "-m", "squall"]
MARK = "## Dashboard overhead: a run with its page open against the same run headless"


def chromium_on_core0():
    """A Chromium wrapper pinned to core 0, so that drawing the page never takes the generator's core."""
    real = shutil.which("chromium") or shutil.which("chromium-browser")
    if not real:
        sys.exit("dashboard_bench: needs Chromium (apt install chromium)")
    wrapper = Path(tempfile.mkdtemp(prefix="squall-bench-chromium-")) / "chromium"
    wrapper.write_text(f'#!/bin/sh\nexec taskset -c 0 {real} "$@"\n')
    wrapper.chmod(0o755)
    return str(wrapper)


def watch(port, stop, browser_path):
    """Opens the dashboard in Chromium and keeps it open (it polls once a second) until `stop`."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=browser_path, args=["--no-sandbox"])
        page = browser.new_page()
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not stop.is_set():
            try:
                page.goto(f"http://127.0.0.1:{port}/")
                break
            except Exception:
                time.sleep(0.1)
        while not stop.is_set():
            page.wait_for_timeout(200)
        browser.close()


def requests_done(out):
    for line in out.splitlines():
        line = line.strip()
        if line.startswith("Requests") and "total" in line:  # squall bench's summary
            return int(line.split()[1].replace(",", ""))
        if line.startswith("Aggregated") and "|" in line:  # Locust's table
            return int(line.split()[1])
    raise RuntimeError("no request count in:\n" + out[-2000:])


def run(kind, url, secs, page, browser_path):
    port = free_port()
    if kind == "bench":
        cmd = [*SQUALL, "bench", url, "-c", 50, "-t", f"{secs}s", "--threads", 1, "-q"]
        if page:
            cmd += ["--web-port", port]
    else:
        cmd = [*SQUALL, "-f", BENCH / "locustfiles" / "fasthttp.py", "-u", 50, "-r", 50, "-t", f"{secs}s"]
        cmd += ["-H", url.rstrip("/"), "--only-summary"]
        cmd += ["--web-port", port, "--autostart", "--autoquit", "0"] if page else ["--headless"]
    stop = threading.Event()
    watcher = None
    if page:
        watcher = threading.Thread(target=watch, args=(port, stop, browser_path), daemon=True)
    proc = subprocess.Popen(["taskset", "-c", "1", *map(str, cmd)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if watcher:
        watcher.start()
    out, _ = proc.communicate(timeout=secs * 4 + 60)
    stop.set()
    if watcher:
        watcher.join(30)
    if proc.returncode != 0:
        raise RuntimeError(f"{kind} failed ({proc.returncode}):\n{out[-2000:]}")
    return requests_done(out) / secs


def main():
    args = cli(__doc__)
    browser_path = chromium_on_core0()
    nginx = PinnedNginx(core=0)
    ratios = {"bench": [], "script": []}
    rates = {(k, p): [] for k in ratios for p in (False, True)}
    try:
        for r in range(args.rounds):
            for kind in ratios:
                order = (False, True) if r % 2 == 0 else (True, False)
                got = {page: run(kind, nginx.url, args.seconds, page, browser_path) for page in order}
                for page, rate in got.items():
                    rates[(kind, page)].append(rate)
                ratios[kind].append(got[True] / got[False])
                print(f"round {r + 1} {kind}: headless {got[False]:,.0f} req/s, page open {got[True]:,.0f}", flush=True)
    finally:
        nginx.stop()
    lines = [
        MARK,
        "",
        f"`make bench` (bench/dashboard_bench.py): nginx and the browser (Chromium {os.uname().machine}, "
        "driven by Playwright, the page polling once a second) on core 0, the generator alone on core 1, "
        f"{args.seconds} s per run, {args.rounds} rounds, headless and page-open runs alternating in order. "
        "Ratio: median of the per-round ratios of requests per second, page open / headless (range in brackets); "
        "the target is at least 0.97 (within 3%).",
        "",
        "| run | headless req/s | page open req/s | ratio |",
        "|---|---:|---:|---:|",
    ]
    names = {"bench": "`squall bench -c 50`", "script": "`squall -f` FastHttpUser, 50 users"}
    for kind, rs in ratios.items():
        lines.append(
            f"| {names[kind]} | {median(rates[(kind, False)]):,.0f} | {median(rates[(kind, True)]):,.0f} | "
            f"**{median(rs):.3f}** ({min(rs):.3f}–{max(rs):.3f}) |"
        )
    write_section(lines)


if __name__ == "__main__":
    main()

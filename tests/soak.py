"""`make soak`: a long run of mixed load, to show nothing drifts (not part of `make test`).

For MINUTES (default 30) at once, against nginx and mosquitto on loopback:
- `squall -f` with HTTP users (tests/locustfiles/soak_mix.py: several endpoints, a TaskSet, think time),
  its dashboard served and read as an open page reads it (/api/live once a second, the downloads once a
  minute),
- `squall bench` in the open model (200 req/s over 20 connections),
- `squall bench --http2` (prior knowledge, h2c) in the open model (100 req/s over 4 connections),
- `squall mqtt` with 50 clients at QoS 1, 2 msg/s each, delivery verified.
Every 10 s it reads each squall process's RSS and open descriptors from /proc. After a warm-up (the
first fifth of the run), the peak of the last half must not be above the first half's by more than 10%
(and 20 MB) of RSS or 5 descriptors (a leak grows without end; connections opened on demand settle);
at the end each run's counts must match what the servers saw (nginx's
access log, within the requests in flight; MQTT: every message delivered).

usage: python tests/soak.py [--minutes 30]
"""

import argparse
import contextlib
import json
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))

from support import Mosquitto, Nginx, free_port, squall_process, wait_for_port  # noqa: E402


def rss_and_fds(pid):
    status = Path(f"/proc/{pid}/status").read_text()
    rss_kb = int(next(line for line in status.splitlines() if line.startswith("VmRSS:")).split()[1])
    return rss_kb * 1024, len(list(Path(f"/proc/{pid}/fd").iterdir()))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=30)
    args = ap.parse_args()
    secs = int(args.minutes * 60)
    work = Path(tempfile.mkdtemp(prefix="squall-soak-"))
    (work / "nginx").mkdir()
    (work / "mosquitto").mkdir()
    nginx = Nginx(work / "nginx")
    broker = Mosquitto(work / "mosquitto", max_queued=1_000_000)
    outs = {k: work / f"{k}.json" for k in ("script", "bench", "bench_h2", "mqtt")}
    web = free_port()
    quiet = {"stdout": (work / "out.txt").open("w"), "stderr": (work / "err.txt").open("w")}
    procs = {
        "script": squall_process(
            "-f", HERE / "locustfiles" / "soak_mix.py", "-H", nginx.url, "-u", 100, "-r", 20, "--autostart",
            "--autoquit", 0, "--web-port", web, "-t", f"{secs}s", "--result-json", outs["script"],
            "--only-summary", **quiet,
        ),
        "bench": squall_process(
            "bench", nginx.url + "/", "--rate", 200, "-c", 20, "-t", f"{secs}s", "--json", outs["bench"], "-q",
        ),
        "bench_h2": squall_process(
            "bench", nginx.h2c_url + "/", "--http2", "--rate", 100, "-c", 4, "-t", f"{secs}s", "--json",
            outs["bench_h2"], "-q",
        ),
        "mqtt": squall_process(
            "mqtt", "--broker", broker.url, "-u", 50, "--rate", 2, "-t", f"{secs}s", "--qos", 1, "--verify",
            "--json", outs["mqtt"], "-q",
        ),
    }  # fmt: skip
    samples = {k: [] for k in procs}
    began = time.monotonic()
    wait_for_port(web, 30)
    page = Page(web)
    try:
        next_sample = 0.0
        while any(p.poll() is None for p in procs.values()):
            now = time.monotonic() - began
            if now >= next_sample:
                next_sample = now + 10
                for name, p in procs.items():
                    if p.poll() is None:
                        with contextlib.suppress(OSError, StopIteration):  # it ended between poll and read
                            samples[name].append((now, *rss_and_fds(p.pid)))
            if procs["script"].poll() is None and not page.read(now):
                time.sleep(1)  # a read the run's end cut short is no failure; one while it runs is
                page.errors += procs["script"].poll() is None
            time.sleep(1)
        codes = {name: p.wait() for name, p in procs.items()}
        seen = nginx.requests_logged()
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.kill()
        nginx.stop()
        broker.stop()
    failures = []
    warm = secs / 5
    for name, rows in samples.items():
        steady = [r for r in rows if r[0] >= warm]
        if len(steady) < 4:
            failures.append(f"{name}: too few samples after the warm-up")
            continue
        # A leak grows without end; connections opened on demand (the open model, up to -c) and
        # allocator arenas settle. So: the last half's peak against the first half's, after warm-up.
        half = len(steady) // 2
        first, last = steady[:half], steady[half:]
        rss0, rss1 = max(r[1] for r in first), max(r[1] for r in last)
        fds0, fds1 = max(r[2] for r in first), max(r[2] for r in last)
        print(f"{name}: peak RSS {rss0 / 1e6:.1f} MB then {rss1 / 1e6:.1f} MB; peak descriptors {fds0} then {fds1}")
        if rss1 > rss0 * 1.10 and rss1 - rss0 > 20e6:
            failures.append(f"{name}: RSS grew from {rss0 / 1e6:.1f} MB to {rss1 / 1e6:.1f} MB")
        if fds1 - fds0 > 5:
            failures.append(f"{name}: open descriptors grew from {fds0} to {fds1}")
    results = {k: json.loads(v.read_text()) for k, v in outs.items()}
    http_done = sum(results[k]["aggregate"]["requests"] for k in ("script", "bench", "bench_h2"))
    in_flight = sum(results[k]["abandoned"] for k in ("script", "bench", "bench_h2"))
    print(f"dashboard: {page.reads:,} reads of /api/live, {page.downloads} downloads, {page.errors} failed")
    if page.errors:
        failures.append(f"dashboard: {page.errors} reads failed")
    print(f"HTTP: squall counted {http_done:,} (+{in_flight} in flight at the end), nginx logged {seen:,}")
    if not http_done <= seen <= http_done + in_flight:
        failures.append(f"HTTP counts differ: squall {http_done:,} (+{in_flight} in flight), nginx {seen:,}")
    delivery = results["mqtt"]["mqtt"]["delivery"]
    print(f"MQTT: {delivery['delivered']:,} delivered, {delivery['lost']} lost")
    if delivery["lost"]:
        failures.append(f"MQTT: {delivery['lost']} messages lost")
    if any(codes.values()):
        failures.append(f"exit codes {codes}")
    for f in failures:
        print("FAIL", f)
    print("soak passed" if not failures else "soak failed")
    sys.exit(1 if failures else 0)


class Page:
    """What an open dashboard page asks: /api/live once a second (with its cursor), the downloads once a
    minute."""

    def __init__(self, port):
        self.url = f"http://127.0.0.1:{port}"
        self.cursor = 0
        self.reads = self.downloads = self.errors = 0
        self.next_download = 60.0

    def _get(self, path):
        with urllib.request.urlopen(self.url + path, timeout=10) as r:
            return r.read()

    def read(self, now):
        """One second's reads; False when one failed."""
        try:
            live = json.loads(self._get(f"/api/live?cursor={self.cursor}"))
            self.cursor = live["cursor"]
            self.reads += 1
            if now >= self.next_download:
                self.next_download = now + 60
                for path in ("/download/result.json", "/download/stats.csv", "/download/report.html"):
                    self._get(path)
                self.downloads += 1
        except OSError:
            return False
        return True


if __name__ == "__main__":
    main()

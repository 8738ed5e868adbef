"""Distributed runs' overhead: `squall bench --ray ADDR --workers 2` against the same load as two local
worker processes (what `--processes 2` runs), on the same nginx, in requests per CPU-second.

Layout (this machine has 2 cores): nginx pinned to core 0; everything on the generating side pinned to
core 1, so that both ways saturate the same core and their costs compare directly. The Ray cluster has
two nodes (a head and a second node process, one CPU each, on 127.0.0.2, without the log monitor that
streams workers' logs to drivers: squall's driver does not ask for them), started under `taskset -c 1`
before the rounds, as a cluster is before a run. The first Ray run, 2 s long, measures the fixed cost of
a distributed run (the driver's start-up, the actors' processes), which longer runs spread thinner.

CPU counted:
- local (`--processes 2`): the parent and its two worker processes, from wait4's rusage (exact).
- Ray: the driver (wait4), each worker process (its actor's RUSAGE_CHILDREN after it exits: exact), and
  every process of the cluster during the run: the actors, GCS, both raylets, the dashboard and
  runtime-env agents, the autoscaler monitor (sampled every 0.1 s; a process that exits loses at most
  its last 0.1 s).
The cluster runs with what docs/distributed.md recommends for load generation: no log monitor, and
Ray's task events, event statistics and frequent metrics off (squall.distributed.cluster.LEAN).

Run it as `python bench/ray_bench.py --skip-install [--rounds 3 --seconds 120]`; it replaces its section
of bench/RESULTS.md. `--scale N` instead runs N workers of tiny loads and prints what the driver spent
following them (docs/distributed.md)."""

import contextlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

from common import PinnedNginx, median, write_section
from squall.distributed.nodes import LocalCluster

CORE = 1  # the generating side
NODE_IP = "127.0.0.2"
CONNECTIONS = 50


def Cluster():
    """A two-node Ray cluster on this machine, each node in a session of its own, pinned to CORE."""
    return LocalCluster(nodes=2, cpus=1, node_ip=NODE_IP, prefix=["taskset", "-c", str(CORE)])


class Sampler:
    """The CPU time of a cluster's processes (but the squall workers, counted exactly elsewhere), from
    samples every 0.1 s: the last seen of each process less what it had when the sampling started."""

    def __init__(self, cluster):
        self.cluster = cluster
        self.first, self.last = {}, {}
        self.done = threading.Event()
        self._sample(self.first)
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _sample(self, into):
        for p in self.cluster.processes():
            with contextlib.suppress(psutil.Error):
                if p.environ().get("SQUALL_WORKER_FEED"):
                    continue
                t = p.cpu_times()
                into[p.pid] = t.user + t.system
                self.last.setdefault(p.pid, 0.0)
                self.last[p.pid] = max(self.last[p.pid], into[p.pid])

    def _run(self):
        while not self.done.wait(0.1):
            self._sample({})

    def stop(self):
        self.done.set()
        self.thread.join()
        return sum(cpu - self.first.get(pid, 0.0) for pid, cpu in self.last.items())


def waited(cmd, env=None, timeout=300):
    """Runs `cmd` pinned to CORE; returns (exit code, CPU seconds of it and its reaped children)."""
    proc = subprocess.Popen(["taskset", "-c", str(CORE), *map(str, cmd)], env=env, stdout=subprocess.DEVNULL)
    killer = threading.Timer(timeout, proc.kill)
    killer.start()
    try:
        _, status, usage = os.wait4(proc.pid, 0)
    finally:
        killer.cancel()
    return os.waitstatus_to_exitcode(status), usage.ru_utime + usage.ru_stime


def bench_argv(url, seconds):
    return [sys.executable, "-m", "squall", "bench", url, "-c", CONNECTIONS, "-t", f"{seconds}s", "-q"]


def local_round(url, seconds, tmp):
    """`squall bench --processes 2`: two worker processes, each its share, and their parent."""
    out = Path(tmp) / "local.json"
    code, cpu = waited([*bench_argv(url, seconds), "--processes", 2, "--json", out])
    assert code == 0, code
    return json.loads(out.read_text())["aggregate"]["requests"], cpu, {"parent and workers": cpu}


def ray_round(url, seconds, tmp, cluster):
    out = Path(tmp) / "ray.json"
    sampler = Sampler(cluster)
    code, driver = waited([*bench_argv(url, seconds), "--ray", cluster.address, "--workers", 2, "--json", out])
    ray_cpu = sampler.stop()
    assert code == 0, code
    result = json.loads(out.read_text())
    workers = sum(w["cpu_s"] for w in result["workers"])
    cpu = driver + workers + ray_cpu
    parts = {"workers": workers, "driver": driver, "ray": ray_cpu}
    return result["aggregate"]["requests"], cpu, parts


def options():
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=60)
    ap.add_argument("--skip-install", action="store_true")
    ap.add_argument("--scale", type=int, metavar="N", help="instead: one run of N workers with tiny loads")
    args = ap.parse_args()
    if not args.skip_install:
        subprocess.run([Path(__file__).parent / "peers.sh"], check=True)
    return args


def scale(args):
    """N workers of 10 requests a second each on the two-node cluster (more workers than CPUs: they
    share them), for `--seconds`: what the driver spends following them, and how current each stream
    stayed. Printed for docs/distributed.md."""
    nginx = PinnedNginx(core=0)
    cluster = Cluster()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "scale.json"
            n = args.scale
            cmd = [
                sys.executable,
                "-m",
                "squall",
                "bench",
                nginx.url,
                "-c",
                n,
                "--rate",
                10 * n,
                "-t",
                f"{args.seconds}s",
            ]
            started = time.monotonic()
            code = subprocess.run([*map(str, cmd), "-q", "--ray", cluster.address, "--workers", str(n), "--json", out])
            wall = time.monotonic() - started
            assert code.returncode == 0, code
            result = json.loads(out.read_text())
    finally:
        cluster.stop()
        nginx.stop()
    d = result["distributed"]["driver"]
    workers = result["workers"]
    lags = sorted(w["stream"]["lag_max_s"] for w in workers)
    seconds = [w["stream"]["seconds"] for w in workers]
    per_worker_second = d["cpu_s"] / (n * d["wall_s"])
    print(
        json.dumps(
            {
                "workers": n,
                "nodes": result["distributed"]["nodes"],
                "run_wall_s": round(wall, 1),
                "requests": result["aggregate"]["requests"],
                "merged_seconds": len(result["timeseries"]),
                "driver": d,
                "driver_cpu_ms_per_worker_second": round(1000 * per_worker_second, 3),
                "poll_bytes_mean": d["poll_bytes_mean"],
                "feed_bytes_per_worker_second": round(
                    sum(w["stream"]["feed_bytes"] for w in workers) / max(sum(seconds), 1)
                ),
                "stream_lag_max_s": {"median": lags[len(lags) // 2], "max": lags[-1]},
                "seconds_per_worker": {"min": min(seconds), "max": max(seconds)},
                "lost": result["distributed"]["lost"],
            },
            indent=1,
        )
    )


def main():
    args = options()
    if args.scale:
        return scale(args)
    nginx = PinnedNginx(core=0)
    cluster = Cluster()
    rows = {"local": [], "ray": []}
    fixed = 0.0
    try:
        with tempfile.TemporaryDirectory() as tmp:
            n, cpu, parts = ray_round(nginx.url, 2, tmp, cluster)  # also a warm-up (first imports)
            fixed = cpu - parts["workers"]
            for r in range(args.rounds):
                for mode in ("local", "ray") if r % 2 == 0 else ("ray", "local"):
                    if mode == "local":
                        n, cpu, parts = local_round(nginx.url, args.seconds, tmp)
                    else:
                        n, cpu, parts = ray_round(nginx.url, args.seconds, tmp, cluster)
                    rows[mode].append((n, cpu, parts))
                    shown = ", ".join(f"{k} {v:.2f}" for k, v in parts.items())
                    print(f"round {r + 1} {mode}: {n:,} requests, {cpu:.2f} CPU-s ({shown}): {n / cpu:,.0f} req/CPU-s")
    finally:
        cluster.stop()
        nginx.stop()
    report(rows, args, fixed)


def report(rows, args, fixed):
    per = {m: [n / cpu for n, cpu, _ in v] for m, v in rows.items()}
    ratios = [a / b for a, b in zip(per["ray"], per["local"])]
    med = {m: median(v) for m, v in per.items()}
    parts = {k: median([p[k] for _, _, p in rows["ray"]]) for k in ("workers", "driver", "ray")}
    # This host is shared: a round's rate swings with the others' load, both ways. Two quantities
    # that the swings touch less: what Ray's side costs, as a share of a Ray run's CPU, and a Ray
    # worker's requests per CPU-second against a local one's (the same program: should be 1).
    overhead = [(p["driver"] + p["ray"]) / cpu for _, cpu, p in rows["ray"]]
    worker = [(n / p["workers"]) / local for (n, _, p), local in zip(rows["ray"], per["local"])]
    lines = [
        "## Distributed: `squall bench --ray` (2 workers) against `--processes 2`",
        "",
        f"Measured {time.strftime('%Y-%m-%d')} by `python bench/ray_bench.py --rounds {args.rounds} --seconds "
        f"{args.seconds}`: `squall bench -c {CONNECTIONS} "
        f"-t {args.seconds}s` against nginx (`return 200`, pinned to core 0), split between two workers, one way "
        "as `--processes 2` (two local worker processes and their parent), the other as two Ray "
        "workers on a two-node Ray cluster on this machine (head and second node, one CPU each, on 127.0.0.2, "
        "set up as docs/distributed.md recommends); "
        "the whole generating side pinned to core 1. CPU counted for Ray: the driver, the two worker "
        "processes, and every process of the cluster during the run (actors, GCS, raylets, agents, monitors).",
        "",
        "| | requests per CPU-second (median) | per round |",
        "|---|---:|---|",
        f"| `--processes 2` | {med['local']:,.0f} | {', '.join(f'{x:,.0f}' for x in per['local'])} |",
        f"| `--ray --workers 2` | {med['ray']:,.0f} | {', '.join(f'{x:,.0f}' for x in per['ray'])} |",
        "",
        f"Ratio Ray / local: **{median(ratios):.2f}** (median of the rounds' ratios; rounds: "
        f"{', '.join(f'{x:.2f}' for x in ratios)}). The Ray run's CPU, median per round: workers "
        f"{parts['workers']:.2f} s, driver {parts['driver']:.2f} s, Ray's processes {parts['ray']:.2f} s. "
        f"What the Ray side costs, as a share of a Ray run's CPU: **{median(overhead):.1%}** (rounds: "
        f"{', '.join(f'{x:.1%}' for x in overhead)}); a Ray worker's requests per CPU-second against a local "
        f"one's: {median(worker):.2f} (rounds: {', '.join(f'{x:.2f}' for x in worker)}): the rounds' ratios "
        "swing with the load others put on this shared host, these two much less. "
        f"A 2-s Ray run costs {fixed:.2f} CPU-s besides its workers: the driver's start-up (Python, Ray's "
        "import and connection) and the actors' processes, once per run, so the ratio grows with the run's "
        "length.",
    ]
    write_section(lines)


if __name__ == "__main__":
    main()

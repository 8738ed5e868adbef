"""Instructions a scripted request costs in user space, by layer: the Python interpreter, squall's engine
(its Rust crates, tokio, the allocator), greenlet, the C library; counted by valgrind's cachegrind, so
runs of one build count within about 1% of each other whatever else the host runs.

Why: this VM has no hardware counters (perf reads no instructions), and CPU time per request moves by
10-30% between runs of the same build here (bench/RESULTS.md's hand notes), so a change worth 1-3% of a
request cannot be told from the host by timing without dozens of rounds. Instructions are not time (a
cache miss costs more than a hundred of them), but they say what a change removed, in a minute.

Method: each file runs twice under cachegrind (squall on core 1, nginx on core 0, as script_bench.py),
for SHORT and LONG seconds; the difference of the two runs' instructions over the difference of their
requests is a running request's cost, start-up and shutdown cancelled out. Under valgrind squall runs
about 20x slower, so the users wait on squall, not on nginx: the work done per second of a run (each
second's stats, and the result's per-second histograms, serialized at its end) counts about 12x more a
request than at full speed (it is listed apart: `Hist`, `hdrhistogram`, `miniz`, `flate2`).
The kernel's work (the floor's, bench/floor.c: about 7 µs of a request) is not counted.

(peers.sh installs valgrind; `make bench-script` runs it after per_request.py.)

usage: python bench/instructions.py [--files shop,shop_httpuser] [--short 10] [--long 20] [--write]
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from common import BENCH, PinnedNginx, compile_squall, write_section
from script_bench import aggregated_requests

MARK = "## Instructions a request of the file people write costs, by layer (cachegrind)"
# A function's layer, from where cachegrind found it (its file, or its object when it has no line
# information: squall's engine is built without it).
PER_SECOND = ("stats::hist", "hdrhistogram", "miniz_oxide", "flate2", "stats::result", "Within::mean")
LAYERS = (
    ("per-second stats", lambda name: any(p in name for p in PER_SECOND)),
    ("Python interpreter", lambda name: "Python-3." in name or "python3.11" in name or "/Python/" in name),
    ("greenlet", lambda name: "greenlet" in name),
    ("C library", lambda name: name.startswith("./") or "glibc" in name),
)
# A row of cg_annotate (instructions only): `  1,234 ( 0.5%)  file:function` (a name may hold spaces).
ROW = re.compile(r"^\s*([\d,]+) \(\s*[\d.]+%\)\s+(\S.*)$")
ENGINE = "squall's engine (Rust, tokio, mimalloc)"


def layer(name):
    for label, test in LAYERS:
        if test(name):
            return label
    return ENGINE


def annotate(out_file):
    """Instructions by function (cachegrind's `file:function` names) of one cachegrind output."""
    text = subprocess.run(
        ["cg_annotate", "--auto=no", "--threshold=0", out_file], capture_output=True, text=True, check=True
    ).stdout
    counts = {}
    for line in text.splitlines():
        m = ROW.match(line)
        if m and "PROGRAM TOTALS" not in line:
            counts[m[2]] = counts.get(m[2], 0) + int(m[1].replace(",", ""))
    return counts


def run(file, users, secs, url, tmp):
    """One run of squall on `file` under cachegrind: (requests, instructions by function)."""
    out, prefix = tmp / f"cg.{Path(file).stem}.{secs}", tmp / f"{Path(file).stem}-{secs}"
    squall = [sys.executable, "-m", "squall", "-f", file, "--headless", "-u", users, "-r", users, "-t", f"{secs}s"]
    cmd = ["taskset", "-c", "1", "valgrind", "--tool=cachegrind", "--cache-sim=no", f"--cachegrind-out-file={out}"]
    cmd += [*squall, "-H", url.rstrip("/"), "--csv", prefix, "--only-summary"]
    env = dict(os.environ, SQUALL_NATIVE_TASKS="0")
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=secs * 10 + 300)
    if p.returncode not in (0, 1):
        raise RuntimeError(f"squall under valgrind exited {p.returncode}: {p.stderr[-2000:]}")
    return aggregated_requests(prefix), annotate(out)


def per_request(file, users, short, long, url, tmp):
    """A running request's instructions by function: the LONG run's less the SHORT run's, over the
    difference of their requests."""
    (n0, a), (n1, b) = (run(file, users, s, url, tmp) for s in (short, long))
    n = n1 - n0
    return n, {k: (b.get(k, 0) - a.get(k, 0)) / n for k in set(a) | set(b)}


def by_layer(functions):
    layers = {}
    for name, count in functions.items():
        layers[layer(name)] = layers.get(layer(name), 0) + count
    return layers


def section(results, short, long):
    order = ("Python interpreter", ENGINE, "greenlet", "C library", "per-second stats")
    lines = [
        MARK,
        "",
        f"`bench/instructions.py` (cachegrind, squall's runs of {long} s less its runs of {short} s, 50 users "
        "`constant(0)`, every task in Python, nginx on core 0): user-space instructions a request, by "
        "layer. Runs of one build count within about 1% of each other whatever the host does (the "
        "requests a poll finds follow the timing), so a change of a few percent is read in one run (time it "
        "too: an instruction is not a cycle). Under valgrind squall runs about 20x "
        "slower: the work done per second of a run (each second's stats; the result's per-second histograms, "
        "serialized at its end) weighs about 12x more a request than at full speed.",
        "",
        "| locustfile | requests counted | " + " | ".join(order) + " | total |",
        "|---|---:|" + "---:|" * (len(order) + 1),
    ]
    for file, (n, functions) in results.items():
        layers = by_layer(functions)
        cells = " | ".join(f"{layers.get(k, 0):,.0f}" for k in order)
        lines.append(f"| {file} | {n:,} | {cells} | {sum(layers.values()):,.0f} |")
    for file, (_, functions) in results.items():
        top = sorted(functions.items(), key=lambda kv: -kv[1])[:15]
        lines += ["", f"The 15 costliest functions of {file} (instructions a request):", ""]
        lines += [f"- {count:,.0f} `{name.split(':', 1)[-1][:100]}` ({layer(name)})" for name, count in top]
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", default="shop,shop_httpuser", help="bench/locustfiles/ names, comma-separated")
    ap.add_argument("--users", default="50")
    ap.add_argument("--short", type=int, default=10)
    ap.add_argument("--long", type=int, default=20)
    ap.add_argument("--write", action="store_true", help="write the section of bench/RESULTS.md")
    args = ap.parse_args()
    compile_squall()
    nginx = PinnedNginx(core=0)
    results = {}
    try:
        with tempfile.TemporaryDirectory() as d:
            for name in args.files.split(","):
                file = str(BENCH / "locustfiles" / f"{name}.py")
                results[f"{name}.py"] = per_request(file, args.users, args.short, args.long, nginx.url, Path(d))
                n, functions = results[f"{name}.py"]
                layers = by_layer(functions)
                print(f"{name}.py: {n:,} requests; " + ", ".join(f"{k} {v:,.0f}" for k, v in layers.items()))
    finally:
        nginx.stop()
    lines = section(results, args.short, args.long)
    if args.write:
        write_section(lines)
    else:
        print("\n".join(lines))


if __name__ == "__main__":
    main()

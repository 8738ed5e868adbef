"""`--processes N`: N copies of the command as workers, each with its share of the users and one engine;
their results are merged losslessly by the engine and reported as one run."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable

from squall import _engine, exitcodes, files
from squall.errors import UsageError
from squall.runtime.signals import deferred, on_stop_signals


def worker() -> tuple[int, int] | None:
    """(index, count) when this process is one of `--processes` workers, else None."""
    spec = os.environ.get("SQUALL_WORKER")
    if not spec:
        return None
    i, n = spec.split("/")
    return int(i), int(n)


def share(total: int, worker: tuple[int, int] | None) -> int:
    """This worker's part of `total` users: the counts differ by one at most and add up to `total`."""
    if worker is None:
        return total
    i, n = worker
    return total // n + (1 if i < total % n else 0)


def write_result(result: dict[str, Any]) -> None:
    """A worker's result, where the process that started it reads it (SQUALL_WORKER_RESULT)."""
    with files.replace(os.environ["SQUALL_WORKER_RESULT"]) as f:
        json.dump(result, f)


# More engines than cores add no CPU (each is a busy Python process); this many a core is taken for a
# mistake, not a plan: `--processes 99999999999999999999` forked until the system killed squall.
MAX_PER_CORE = 16


def count(args: argparse.Namespace) -> int:
    """The engines `--processes` asks for (-1: one per core); a usage error below 1 or past
    MAX_PER_CORE a core."""
    cores = os.cpu_count() or 1
    n: int = cores if args.processes == -1 else 1 if args.processes is None else args.processes
    if n < 1:
        raise UsageError(f"invalid number of processes '{args.processes}'")
    if n > MAX_PER_CORE * cores:
        raise UsageError(
            f"--processes {args.processes}: more than {MAX_PER_CORE} a core for this machine's {cores} cores "
            f"(one a core is the most that adds CPU)"
        )
    return n


def run_processes(
    args: argparse.Namespace,
    users: int,
    final_output: Callable[[dict[str, Any], argparse.Namespace], object],
    what: str = "users",
    signal_codes: bool = True,
) -> int:
    """`--processes N`: N copies of this command as workers, each with its share of the users and one
    engine; their results are merged losslessly (histograms added) and reported as one run. A stop
    signal makes the exit code 130/143 when `signal_codes` (bench, mqtt); `squall -f` keeps Locust's
    code, which its workers' codes already are."""
    n = count(args)
    sys.stderr.write(f"squall: {n} worker processes, {users} {what} in all; the tables come at the end\n")
    with deferred():  # once the workers stop, a second Ctrl-C waits for the merged outputs
        with tempfile.TemporaryDirectory(prefix="squall-workers-") as tmp:
            paths = [os.path.join(tmp, f"worker{i}.json") for i in range(n)]
            procs = [
                subprocess.Popen(
                    [sys.executable, "-m", "squall", *args.argv],
                    stdout=subprocess.DEVNULL,
                    env=dict(os.environ, SQUALL_WORKER=f"{i}/{n}", SQUALL_WORKER_RESULT=paths[i]),
                )
                for i in range(n)
            ]
            received: list[int] = []

            def forward(signum: int) -> None:
                received.append(signum)
                for p in procs:
                    p.send_signal(signum)

            with on_stop_signals(forward):
                codes = [p.wait() for p in procs]
            docs = [Path(p).read_text() for p in paths if os.path.exists(p)]
        if not docs:
            sys.stderr.write("squall: error: no worker process produced a result\n")
            return max(codes) or exitcodes.CANNOT_START
        result = _engine.merge_results(docs)
        exceptions: dict[tuple[str, str], dict[str, Any]] = {}  # merged by (message, traceback)
        for doc in docs:
            for x in json.loads(doc).get("exceptions", []):
                entry = exceptions.setdefault((x["message"], x["traceback"]), dict(x, count=0))
                entry["count"] += x["count"]
        result["exceptions"] = list(exceptions.values())
        final_output(result, args)
    if received and signal_codes:
        return exitcodes.stopped_by(received[0])
    if any(not t["passed"] for t in result.get("thresholds", [])):  # judged on the merged result
        return exitcodes.THRESHOLDS
    return max(codes)

"""Distributed runs on Ray: `--ray ADDRESS` (auto, local, or the head's HOST:PORT) with `--workers N`
runs the command on N workers placed on the cluster's nodes, each a Ray actor running the same squall
command with its share of the load (as `--processes` shares it), and this process drives them: one
live view of the whole cluster, one merged result (lossless), a list of the workers in the report.

Ray is an optional extra (`pip install 'squall[ray]'`); nothing here imports it until a run asks for
it, so the commands start as fast without it. See docs/distributed.md."""

from __future__ import annotations

import argparse

from squall import processes
from squall.errors import UsageError

# What a distributed run does when a worker or its node is lost (--on-worker-loss).
ON_LOSS = ("stop", "continue", "replace")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """--ray, --workers, --on-worker-loss (for bench, mqtt and squall -f)."""
    g = parser.add_argument_group("distributed (Ray)")
    g.add_argument(
        "--ray",
        metavar="ADDRESS",
        help="run on a Ray cluster: auto (the running one), local (start one here), or the head's HOST:PORT "
        "(needs pip install 'squall[ray]')",
    )
    g.add_argument(
        "--workers",
        type=_positive,
        metavar="N",
        help="with --ray: workers sharing the load (default: one per CPU of the cluster)",
    )
    g.add_argument(
        "--on-worker-loss",
        choices=ON_LOSS,
        default="continue",
        help="with --ray, when a worker or its node is lost: stop the run, continue without it (default), "
        "or replace it on the remaining nodes",
    )


def _positive(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid number of workers '{text}'") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"invalid number of workers '{text}'")
    return n


def role(args: argparse.Namespace) -> str | None:
    """`master`, `worker` or None, from Locust's flags (a distributed run's own workers have none)."""
    master, worker = bool(getattr(args, "master", False)), bool(getattr(args, "worker", False))
    if master and worker:
        raise UsageError("--master and --worker: a process is one or the other")
    if (master or worker) and getattr(args, "ray", None):
        raise UsageError("--ray with --master or --worker: the master opens the cluster itself")
    return "master" if master else "worker" if worker else None


def requested(args: argparse.Namespace) -> bool:
    """This process drives a distributed run (never a worker of one)."""
    return bool(getattr(args, "ray", None)) and processes.worker() is None


def check(args: argparse.Namespace) -> None:
    """--workers or --on-worker-loss without --ray: a usage error, as any flag that does nothing."""
    driven = getattr(args, "ray", None) or getattr(args, "master", False)
    if not driven and (args.workers is not None or args.on_worker_loss != "continue"):
        raise UsageError("--workers and --on-worker-loss go with --ray (or --master)")

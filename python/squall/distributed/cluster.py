"""Reaching a Ray cluster: `--ray auto` (the running cluster this machine belongs to), `--ray local` (a
cluster started inside this run and gone with it), or an address (HOST:PORT of the head's GCS).

Ray is an optional extra: without it, `--ray` is a usage error that says how to install it. Ray's own
logging stays off the console (errors only), and its usage statistics are not sent unless the user
asked for them (RAY_USAGE_STATS_ENABLED). The driver also turns off, unless the environment sets them,
what squall does not use and a process pays for every second: task events (for Ray's state API and
timeline), event statistics, and metrics reported more often than once a minute (`LEAN`; the same
settings on `ray start` take a two-node cluster's idle cost from 33 to 21 ms of CPU a second,
docs/distributed.md)."""

from __future__ import annotations

import logging
import os
import socket
from types import ModuleType
from typing import Any

from squall.errors import UsageError

INSTALL_HINT = "pip install 'squall[ray]'"
CONNECT_TIMEOUT = 5.0  # seconds to reach the head's address before Ray is asked to


class ClusterError(Exception):
    """The cluster cannot be reached or cannot host the workers (exit 3, one line)."""


LEAN = {
    "RAY_USAGE_STATS_ENABLED": "0",
    "RAY_task_events_report_interval_ms": "0",
    "RAY_event_stats": "false",
    "RAY_metrics_report_interval_ms": "60000",
}


def import_ray() -> ModuleType:
    for name, value in LEAN.items():
        os.environ.setdefault(name, value)
    try:
        import ray
    except ImportError:
        raise UsageError(f"--ray needs Ray, which is not installed: {INSTALL_HINT}") from None
    return ray


def connect(address: str) -> ModuleType:
    """Connects this process to the cluster as its driver; returns the `ray` module."""
    if not address:
        raise UsageError("--ray takes auto, local or the head's HOST:PORT")
    ray = import_ray()
    if address not in ("auto", "local"):
        _reachable(address)  # Ray itself waits minutes for an address where nothing answers
    options: dict[str, Any] = {"log_to_driver": False, "logging_level": logging.ERROR, "configure_logging": True}
    try:
        if address == "local":
            ray.init(include_dashboard=False, **options)
        else:
            ray.init(address=address, **options)
    except (ConnectionError, RuntimeError, ValueError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ClusterError(f"cannot reach the Ray cluster at '{address}': {first}") from None
    _quiet_startup_warnings(ray)
    return ray


BENIGN = ("worker processes have been started on node",)  # many workers start at once: by design


def _quiet_startup_warnings(ray: ModuleType) -> None:
    """Ray prints the raylets' warnings on the driver's console whatever `log_to_driver` says; the one
    that many actors starting at once trigger says nothing a squall run needs, so it is dropped (the
    others still print). Done only where Ray's driver has the function this relies on."""
    worker = getattr(getattr(ray, "_private", None), "worker", None)
    show = getattr(worker, "print_to_stdstream", None)
    if worker is None or show is None or getattr(show, "squall_filtered", False):
        return

    def filtered(data: dict[str, Any], *args: Any, **kwargs: Any) -> None:
        lines = [line for line in data.get("lines", []) if not any(b in line for b in BENIGN)]
        if lines:
            show(dict(data, lines=lines), *args, **kwargs)

    filtered.squall_filtered = True  # type: ignore[attr-defined]
    worker.print_to_stdstream = filtered


def _reachable(address: str) -> None:
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not port.isdigit():
        raise UsageError(f"--ray '{address}': give auto, local or the head's HOST:PORT")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_TIMEOUT).close()
    except OSError as e:
        raise ClusterError(f"cannot reach the Ray cluster at '{address}': {e.strerror or e}") from None


def cpus(ray: ModuleType) -> int:
    """The cluster's CPUs (at least 1): `--workers`' default, one worker per CPU."""
    return max(1, int(ray.cluster_resources().get("CPU", 1)))


def offered(ray: ModuleType, resource: str) -> int:
    """The units of a custom resource the cluster's nodes offer (`--worker` nodes offer one a worker)."""
    return int(ray.cluster_resources().get(resource, 0))


def alive_nodes(ray: ModuleType) -> dict[str, dict[str, Any]]:
    """node id -> Ray's record of it, for the nodes alive now."""
    return {n["NodeID"]: n for n in ray.nodes() if n.get("Alive")}

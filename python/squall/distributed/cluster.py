"""Reaching a Ray cluster: `--ray auto` (the running cluster this machine belongs to), `--ray local` (a
cluster started inside this run and gone with it, leaving nothing behind), or an address (HOST:PORT of
the head's GCS). Authentication, the same way for each: squall.distributed.auth.

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
import shutil
import socket
import tempfile
from types import ModuleType
from typing import Any

from squall.distributed import auth
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
    """Connects this process to the cluster as its driver; returns the `ray` module. Authentication as
    squall.distributed.auth decides it: the cluster's own mode for one that runs, a token of the run's
    own for `local`; a cluster that refuses this machine's token is a ClusterError saying so."""
    if not address:
        raise UsageError("--ray takes auto, local or the head's HOST:PORT")
    ray = import_ray()
    if address not in ("auto", "local"):
        _reachable(address)  # Ray itself waits minutes for an address where nothing answers
    options: dict[str, Any] = {"log_to_driver": False, "logging_level": logging.ERROR, "configure_logging": True}
    try:
        if address == "local":
            ray.init(address="local", include_dashboard=False, _temp_dir=_start_local(ray), **options)
        else:
            gcs = _gcs_address(ray, address)
            if gcs:
                auth.join(ray, gcs)
            ray.init(address=address, **options)
    except auth.AuthError as e:
        raise ClusterError(str(e)) from None
    except (ConnectionError, RuntimeError, ValueError) as e:
        if any(auth.refused(str(x)) for x in _chain(e)):
            raise ClusterError(auth.refused_line(address)) from None
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ClusterError(f"cannot reach the Ray cluster at '{address}': {first}") from None
    _quiet_startup_warnings(ray)
    return ray


def disconnect(ray: ModuleType) -> None:
    """Leaves the cluster; a `--ray local` cluster ends, and what it was given goes: its temporary
    session directory, the environment it was started with (squall.distributed.auth)."""
    ray.shutdown()
    if _local:
        shutil.rmtree(_local.pop("temp_dir"), ignore_errors=True)
        for name, value in _local.pop("environ").items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


_local: dict[str, Any] = {}  # the `--ray local` cluster of this process: its temp dir, the environment before it


def _start_local(ray: ModuleType) -> str:
    """The environment and the session directory of a `--ray local` cluster (its processes inherit both):
    token mode with a token of the run's own when none is at hand, and a temporary directory instead
    of /tmp/ray, so that the run leaves nothing behind that a later one would find."""
    changes = auth.local_env()
    _local["environ"] = {name: os.environ.get(name) for name in changes}
    os.environ.update(changes)
    ray._raylet.Config.initialize("")  # this process reads the mode anew, as Ray's own token setup has it
    _local["temp_dir"] = tempfile.mkdtemp(prefix="squall-ray-")
    return str(_local["temp_dir"])


def _gcs_address(ray: ModuleType, address: str) -> str | None:
    """The HOST:PORT of the cluster's GCS that `address` names, when it can be known and answers (None
    for Ray Client's ray:// addresses, and for an `auto` that finds nothing: Ray reports those)."""
    if address.startswith("ray://"):
        return None
    if address != "auto":
        return address
    try:
        found = ray._private.services.canonicalize_bootstrap_address("auto", None)
    except Exception:  # no cluster on this machine: ray.init says so
        return None
    if not found:
        return None
    try:
        _reachable(str(found))
    except (ClusterError, UsageError):
        return None
    return str(found)


def _chain(e: BaseException) -> list[BaseException]:
    out: list[BaseException] = []
    current: BaseException | None = e
    while current is not None and current not in out:
        out.append(current)
        current = current.__cause__ or current.__context__
    return out


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

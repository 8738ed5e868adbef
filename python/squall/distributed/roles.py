"""Locust's `--master` and `--worker` on Ray, so that the command lines, Helm charts and CI jobs written
for Locust's distributed mode run squall unchanged.

- `squall -f FILE --master [--master-bind-host H] [--master-bind-port P] [--expect-workers N]
  [--expect-workers-max-wait S]` opens a Ray cluster: its head listens on H:P (Locust's 5557 by
  default, every interface for `*`) and hosts no load (it offers no CPU, as Locust's master runs no
  users). It waits for N worker nodes (`--expect-workers`, default 1; at most S seconds when given,
  else as long as it takes, as Locust's master), then runs as `--ray` does: one worker per CPU the
  worker nodes offer (or `--workers`), the locustfile sent to nodes that do not have it, one merged
  result. It closes the cluster at the end, which ends the workers.
- `squall -f FILE --worker [--master-host H] [--master-port P] [--processes N]` joins the master's
  cluster as a node that hosts workers: one, or N (-1: one per core), as Locust's worker runs one
  process, or N. It waits for the master to
  listen (up to `MASTER_WAIT_S`), and leaves when the master's cluster closes, or on Ctrl-C. Its own
  `-f` is not run: the master's locustfile is (as with Locust's `-f -`).

One `squall --worker` is one of `--expect-workers`' workers, whatever number of engines it hosts.
Ray must be installed on every node (`pip install 'squall[ray]'`), in the same version."""

from __future__ import annotations

import argparse
import contextlib
import socket
import sys
import time
from types import ModuleType
from typing import Any, Callable

from squall import exitcodes, processes
from squall.distributed import auth, cluster
from squall.distributed.nodes import WORKER_RESOURCE, Node, NodeError, node_ip_towards
from squall.errors import UsageError
from squall.runtime.signals import on_stop_signals

MASTER_WAIT_S = 60.0  # a worker waits this long for its master to listen (Locust's heartbeat timeout)
GONE_AFTER = 3  # a master whose port refuses this many looks a second apart has ended
WAITING_EVERY_S = 5.0  # the master's "waiting for workers" line


def master_address(args: argparse.Namespace, ray: ModuleType) -> tuple[str, int]:
    """The head's address: `--master-bind-host` (this machine's own address for `*`) and port."""
    host = args.master_bind_host
    if host in ("*", "", "0.0.0.0"):
        host = ray.util.get_node_ip_address()
    port = int(args.master_bind_port)
    if not 0 < port < 65536:
        raise UsageError(f"--master-bind-port {port}: not a port")
    return str(host), port


def open_master(args: argparse.Namespace) -> tuple[Node, Callable[[Any], None]]:
    """Opens the master's head; returns it and what waits for the workers (the run's `prepare`)."""
    ray = cluster.import_ray()
    host, port = master_address(args, ray)
    expected = int(args.expect_workers or 1)
    max_wait = float(args.expect_workers_max_wait or 0)
    head = Node(head=True, port=port, node_ip=host, num_cpus=0)
    try:
        head.start()
    except NodeError as e:
        raise cluster.ClusterError(f"--master cannot listen on {host}:{port}: {e}") from None
    args.ray = f"{host}:{port}"
    sys.stderr.write(f"squall: master listening on {host}:{port} (a Ray head); waiting for {expected} workers\n")
    sys.stderr.flush()

    def wait_for_workers(ray: ModuleType) -> None:
        began = time.monotonic()
        said = began
        stopped: list[int] = []
        with on_stop_signals(stopped.append):
            while True:
                joined = worker_nodes(ray)
                if len(joined) >= expected:
                    break
                now = time.monotonic()
                if stopped:
                    raise SystemExit(exitcodes.stopped_by(stopped[0]))
                if max_wait and now - began > max_wait:
                    raise cluster.ClusterError(
                        f"gave up waiting for workers to connect: {len(joined)} of {expected} after {max_wait:g} s"
                    )
                if now - said >= WAITING_EVERY_S:
                    said = now
                    sys.stderr.write(
                        f"squall: waiting for workers to be ready, {len(joined)} of {expected} connected\n"
                    )
                    sys.stderr.flush()
                time.sleep(0.2)
        sys.stderr.write(f"squall: {len(joined)} workers connected ({', '.join(sorted(joined))})\n")
        sys.stderr.flush()

    return head, wait_for_workers


def worker_nodes(ray: ModuleType) -> dict[str, str]:
    """The nodes alive that offer to host workers: node id -> its address."""
    return {
        node_id: str(n.get("NodeManagerAddress"))
        for node_id, n in cluster.alive_nodes(ray).items()
        if (n.get("Resources") or {}).get(WORKER_RESOURCE)
    }


def run_worker(args: argparse.Namespace) -> int:
    """`squall -f FILE --worker`: this machine as a node of the master's cluster, until it closes."""
    ray = cluster.import_ray()
    host, port = args.master_host, int(args.master_port)
    slots = processes.count(args)  # engines this node hosts: one, or --processes N (-1: one per core)
    try:
        node_ip = node_ip_towards(host)
    except NodeError as e:
        sys.stderr.write(f"squall: error: {e}\n")
        return exitcodes.CANNOT_START
    stopped: list[int] = []
    with on_stop_signals(stopped.append):
        waited = time.monotonic()
        said = False
        while not _listening(host, port):
            if stopped:
                return exitcodes.stopped_by(stopped[0])
            if time.monotonic() - waited > MASTER_WAIT_S:
                sys.stderr.write(f"squall: error: no master at {host}:{port} after {MASTER_WAIT_S:.0f} s\n")
                return exitcodes.CANNOT_START
            if not said:
                sys.stderr.write(f"squall: waiting for the master at {host}:{port}\n")
                sys.stderr.flush()
                said = True
            time.sleep(0.5)
        try:
            auth.join(ray, f"{host}:{port}")  # the master's authentication, or why not (one line)
        except auth.AuthError as e:
            sys.stderr.write(f"squall: error: {e}\n")
            return exitcodes.CANNOT_START
        node = Node(
            head=False,
            address=f"{host}:{port}",
            node_ip=node_ip,
            num_cpus=slots,
            resources={WORKER_RESOURCE: float(slots)},
        )
        try:
            node.start()
        except NodeError as e:
            sys.stderr.write(f"squall: error: cannot join the master at {host}:{port}: {e}\n")
            return exitcodes.CANNOT_START
        try:
            sys.stderr.write(
                f"squall: worker joined the master at {host}:{port} as {node_ip}, hosting up to {slots} "
                f"engine{'s' if slots != 1 else ''}\n"
            )
            sys.stderr.flush()
            refused = 0
            while not stopped:
                time.sleep(1.0)
                listening = _listening(host, port)
                if not node.alive():
                    if not listening:  # the master closed its cluster, and the node went with it
                        sys.stderr.write(f"squall: the master at {host}:{port} has ended; worker quitting\n")
                        return exitcodes.OK
                    sys.stderr.write("squall: error: this worker's Ray node stopped\n")
                    return exitcodes.CANNOT_START
                refused = 0 if listening else refused + 1
                if refused >= GONE_AFTER:
                    sys.stderr.write(f"squall: the master at {host}:{port} has ended; worker quitting\n")
                    return exitcodes.OK
            return exitcodes.stopped_by(stopped[0])
        finally:
            node.stop()


def _listening(host: str, port: int) -> bool:
    with contextlib.suppress(OSError):
        socket.create_connection((host, port), timeout=1.0).close()
        return True
    return False

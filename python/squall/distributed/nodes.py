"""Ray nodes this process starts itself: the head that `squall -f --master` opens, the node that
`squall -f --worker` adds to it, and the local clusters of the tests and of bench/ray_bench.py.

Each node is `ray start` run in a session of its own: Ray's daemons (GCS, raylet, its workers) stay in
that session, so stopping the node ends exactly those processes (never `ray stop`, which stops every
Ray process on the machine). What squall does not use is off (`cluster.LEAN`), and so is the log
monitor (it streams actors' logs to drivers, and squall's driver asks for none).

A node outlives nothing that started it: beside it runs a reaper, a child of the starting process that
the kernel signals when that process dies (PR_SET_PDEATHSIG), however it dies (a SIGKILL included),
and that then ends the node's session. Without it a master killed outright left its Ray head running,
and a killed `--worker` its node (seen in a test run here).

Ray refuses 127.0.0.1 as a node's address in a cluster of several nodes (it substitutes the machine's
own); the tests use 127.0.0.2, which keeps every connection on the loopback interface."""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from typing import TYPE_CHECKING

from squall.distributed import auth
from squall.distributed.cluster import LEAN
from squall.ports import free_port

if TYPE_CHECKING:
    import psutil  # type: ignore[import-untyped]

# The resource a `--worker` node offers, one unit per worker it can host: a `--master` run places
# its workers only where this is (never on the master's own head, which generates no load, as
# Locust's master generates none).
WORKER_RESOURCE = "squall_worker"
START_TIMEOUT = 120.0  # seconds for `ray start` to bring a node up


class NodeError(Exception):
    """The node could not start (one line, the end of Ray's own words)."""


def ray_command() -> str:
    """The `ray` program of this Python's environment (the same Ray as the driver's)."""
    return shutil.which("ray", path=os.path.dirname(sys.executable)) or "ray"


class Node:
    """One Ray node started by this process: `head` opens a cluster on `port`, otherwise the node
    joins the cluster at `address`."""

    def __init__(
        self,
        *,
        head: bool,
        address: str | None = None,
        port: int | None = None,
        node_ip: str | None = None,
        num_cpus: int | None = None,
        resources: dict[str, float] | None = None,
        prefix: Sequence[str] = (),
        auth_mode: str | None = None,
    ) -> None:
        self.head = head
        self.address = address
        self.auth_mode = auth_mode
        self.temp_dir: str | None = None
        argv = [*prefix, ray_command(), "start", "--disable-usage-stats", "--include-log-monitor=false"]
        if head:
            self.temp_dir = tempfile.mkdtemp(prefix="squall-ray-")
            argv += ["--head", "--port", str(port or 6379), "--include-dashboard=false", "--temp-dir", self.temp_dir]
        else:
            if not address:
                raise ValueError("a node that is not a head joins an address")
            argv += ["--address", address]
        if node_ip:
            argv += ["--node-ip-address", node_ip]
        if num_cpus is not None:
            argv += ["--num-cpus", str(num_cpus)]
        if resources:
            argv += ["--resources", json.dumps(resources)]
        self.argv = argv
        self.session: int | None = None
        self.reaper: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = START_TIMEOUT) -> None:
        """Starts the node; returns once Ray says it is up. NodeError if it is not. Its authentication
        mode is given to Ray explicitly (squall.distributed.auth): the one asked for, else this process's
        RAY_AUTH_MODE, else for a head the rule for the clusters squall opens."""
        env = dict(LEAN, **os.environ)
        mode = self.auth_mode or env.get(auth.MODE) or (auth.head_mode(env) if self.head else None)
        if mode:
            env[auth.MODE] = mode
        try:
            p = subprocess.Popen(
                self.argv,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                start_new_session=True,
            )
        except OSError as e:
            raise NodeError(f"cannot run '{self.argv[0]}': {e.strerror or e}") from None
        self.session = p.pid  # its daemons stay in the session `ray start` opened
        self.reaper = _start_reaper(self.session)
        try:
            out, _ = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.stop()
            raise NodeError(f"ray start did not finish within {timeout:.0f} s") from None
        if p.returncode != 0:
            self.stop()
            if not self.head and auth.refused(out):
                raise NodeError(auth.refused_line(str(self.address)))
            lines = [line.strip() for line in out.splitlines() if line.strip()]
            errors = [line for line in lines if "error" in line.lower()] or lines
            raise NodeError(f"ray start failed: {errors[-1] if errors else f'exit code {p.returncode}'}")

    def processes(self) -> list[psutil.Process]:
        """The node's processes alive now (those of its session)."""
        return [] if self.session is None else session_processes(self.session)

    def alive(self) -> bool:
        return bool(self.processes())

    def stop(self, grace: float = 5.0) -> None:
        """Ends the node's processes (SIGTERM, then SIGKILL after `grace` seconds)."""
        if self.session is not None:
            end_session(self.session, grace)
        if self.reaper is not None:
            self.reaper.kill()  # nothing left for it to end
            self.reaper.wait()
            self.reaper = None
        if self.temp_dir:
            shutil.rmtree(self.temp_dir, ignore_errors=True)


class LocalCluster:
    """A cluster of `nodes` nodes on this machine, `cpus` CPUs each (the tests' and bench/'s two-node
    cluster): a head and nodes joining it, all on `node_ip`."""

    def __init__(self, nodes: int = 2, cpus: int = 1, node_ip: str = "127.0.0.2", prefix: Sequence[str] = ()):
        self.port = free_port()
        self.address = f"{node_ip}:{self.port}"
        mode = auth.head_mode()  # every node of it the same (squall.distributed.auth)
        self.nodes = [Node(head=True, port=self.port, node_ip=node_ip, num_cpus=cpus, prefix=prefix, auth_mode=mode)]
        self.nodes += [
            Node(head=False, address=self.address, node_ip=node_ip, num_cpus=cpus, prefix=prefix, auth_mode=mode)
            for _ in range(nodes - 1)
        ]
        try:
            for node in self.nodes:
                node.start()
        except NodeError:
            self.stop()
            raise

    def processes(self) -> list[psutil.Process]:
        return [p for node in self.nodes for p in node.processes()]

    def stop(self) -> None:
        for node in reversed(self.nodes):
            node.stop()


PR_SET_PDEATHSIG = 1


def _start_reaper(session: int) -> subprocess.Popen[bytes] | None:
    """A child that ends `session` when this process dies (see the module's doc)."""
    owner = os.getpid()

    def die_with_owner() -> None:
        # SIGTERM stays blocked through exec (a signal mask is inherited): one arriving while the
        # reaper's Python starts (0.4 s here) waits for its sigtimedwait instead of killing it.
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)

    try:
        return subprocess.Popen(
            [sys.executable, "-m", "squall.distributed.nodes", "reap", str(session), str(owner)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            preexec_fn=die_with_owner,
        )
    except OSError:
        return None


def session_processes(session: int) -> list[psutil.Process]:
    """The processes alive now in `session` (zombies are not: they wait for a parent to reap them)."""
    import psutil  # here, for start-up speed: 0.04 CPU-s that a run without nodes to end need not pay

    out: list[psutil.Process] = []
    for p in psutil.process_iter():
        with contextlib.suppress(OSError, psutil.Error):
            if os.getsid(p.pid) == session and p.status() != psutil.STATUS_ZOMBIE:
                out.append(p)
    return out


def end_session(session: int, grace: float = 5.0) -> None:
    """Ends every process of `session`: SIGTERM, then after `grace` seconds SIGKILL to whatever is in
    the session then (a daemon may start a process while the others shut down)."""
    import psutil  # here, for start-up speed (see session_processes)

    procs = session_processes(session)
    for p in procs:
        with contextlib.suppress(psutil.Error):
            p.terminate()
    psutil.wait_procs(procs, timeout=grace)
    for _ in range(3):
        procs = session_processes(session)
        if not procs:
            return
        for p in procs:
            with contextlib.suppress(psutil.Error):
                p.kill()
        psutil.wait_procs(procs, timeout=grace)


def _reap(session: int, owner: int) -> None:
    """The reaper's life: wait for SIGTERM (its owner died), or see the owner gone, then end the session.

    SIGTERM is blocked from before exec (`_start_reaper`) and taken with sigtimedwait, never by a
    handler: a handler that sets a threading.Event deadlocks if it lands while the main thread holds
    the Event's lock, and one installed after start-up misses a signal sent before it."""
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    while os.getppid() == owner:  # reparented: the owner died before the prctl took hold
        if signal.sigtimedwait({signal.SIGTERM}, 1.0) is not None:
            break
    end_session(session)


def node_ip_towards(host: str) -> str:
    """The address this machine reaches `host` from (the one its node offers the cluster). For a
    loopback head, the head's own address: Ray takes 127.0.0.1 for "not configured" in a cluster."""
    try:
        infos = socket.getaddrinfo(host, 1, type=socket.SOCK_DGRAM)
    except socket.gaierror as e:
        raise NodeError(f"cannot resolve the master's host '{host}': {e.strerror}") from None
    family, _, _, _, sockaddr = infos[0]
    if str(sockaddr[0]).startswith("127."):
        return str(sockaddr[0])
    with socket.socket(family, socket.SOCK_DGRAM) as s:
        s.connect(sockaddr)  # UDP: no packet sent, the kernel only picks the route
        return str(s.getsockname()[0])


if __name__ == "__main__" and len(sys.argv) == 4 and sys.argv[1] == "reap":
    _reap(int(sys.argv[2]), int(sys.argv[3]))

"""The open-file limit: each connection is a file descriptor."""

from __future__ import annotations

import fcntl
import os
import resource

from squall.errors import UsageError

# Descriptors the process needs besides connections: the interpreter, epoll, eventfds, pipes, files.
OVERHEAD = 64


def ensure_open_files(connections: int) -> None:
    """Raises the soft limit as far as the hard limit allows, or explains why the run cannot start;
    then sizes the descriptor table for the run."""
    check_open_files(connections)
    need = connections + OVERHEAD
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < need:
        _raise_limit(connections, need, hard)
    _grow_descriptor_table(need)


def check_open_files(connections: int) -> None:
    """Raises the UsageError `ensure_open_files` would, changing nothing (the dashboard's Start and Edit
    check a user count with it on the server's thread; the run's thread then ensures it). An unlimited
    hard limit is the kernel's own (fs.nr_open): no process opens more."""
    need = connections + OVERHEAD
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard == resource.RLIM_INFINITY:
        hard = _nr_open()
    if hard < need:
        _raise_limit(connections, need, hard)


def _nr_open() -> int:
    try:
        with open("/proc/sys/fs/nr_open", encoding="ascii") as f:
            return int(f.read())
    except (OSError, ValueError):
        return 1 << 20  # Linux's default


def most_connections() -> int:
    """The most connections a run can open: the open-file hard limit less OVERHEAD, and at most the local
    port range (each connection to one address takes a port of it: 28,232 by Linux's default)."""
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    files = 1 << 20 if hard == resource.RLIM_INFINITY else hard - OVERHEAD
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range", encoding="ascii") as f:
            low, high = map(int, f.read().split())
        ports = high - low + 1
    except (OSError, ValueError):
        ports = 28_232
    return max(1, min(files, ports))


def _raise_limit(connections: int, need: int, hard: int) -> None:
    if hard != resource.RLIM_INFINITY and hard < need:
        raise UsageError(
            f"{connections} connections need about {need} open files, but the limit is {hard} "
            f"(raise it with 'ulimit -n {need}' as root, or use fewer connections)"
        )
    resource.setrlimit(resource.RLIMIT_NOFILE, (need if hard == resource.RLIM_INFINITY else hard, hard))


def _grow_descriptor_table(size: int) -> None:
    """Linux grows a process's descriptor table by doubling as sockets open, and in a multithreaded
    process each growth waits for an RCU grace period inside socket(): 10-30 ms measured here, a stall
    of the engine thread that made open-model sends late (and showed as latency the target never
    caused). Duplicating a descriptor to the top of the range grows the table once, before the run."""
    probe = os.open(os.devnull, os.O_RDONLY)
    try:
        os.close(fcntl.fcntl(probe, fcntl.F_DUPFD_CLOEXEC, size - 1))
    except OSError:
        pass  # beyond fs.nr_open: the table grows as it would have
    finally:
        os.close(probe)

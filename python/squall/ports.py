"""A free loopback port for a server started next (the tests' and benchmarks' servers, a local Ray
cluster's head).

Binding port 0 gives a port from the kernel's ephemeral range, and between that check and the server's
own bind any outgoing connection on the machine can take it as its local port: a load generator opens
thousands, and the server's bind then fails with EADDRINUSE (as it does while such a connection sits in
TIME_WAIT). CI lost a run to this: an nginx whose port had been taken never listened. Ports below the
range are only ever taken by a bind, which the check here sees. The search starts at 20,000: a Ray head
refuses a port within its workers' default range (10,002-19,999), and 10,001 is its client server's."""

from __future__ import annotations

import random
import socket
from pathlib import Path

LOWEST = 20_000
# Linux's default when /proc says nothing.
DEFAULT_EPHEMERAL = (32_768, 60_999)


def ephemeral_ports() -> tuple[int, int]:
    """The kernel's range of local ports for outgoing connections (and for binding port 0)."""
    try:
        low, high = map(int, Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    except (OSError, ValueError):
        return DEFAULT_EPHEMERAL
    return low, high


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing is bound to on `host`, chosen at random between LOWEST and the ephemeral range
    (from the ephemeral range only if that leaves no room, or no free port in 100 tries)."""
    low, _ = ephemeral_ports()
    if low > LOWEST + 1000:
        for _ in range(100):
            port = random.randrange(LOWEST, low)
            with socket.socket() as s:
                try:
                    s.bind((host, port))
                except OSError:
                    continue
                return port
    with socket.socket() as s:
        s.bind((host, 0))
        found: int = s.getsockname()[1]
        return found

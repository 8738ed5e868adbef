"""squall.ports.free_port: a bindable port below the kernel's ephemeral range, from 20,000 up."""

import socket

from squall import ports


def test_the_port_is_free_and_below_the_ephemeral_range():
    low, _ = ports.ephemeral_ports()
    for _ in range(20):
        port = ports.free_port()
        assert ports.LOWEST <= port < low
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))  # nothing holds it


def test_a_range_that_leaves_no_room_falls_back_to_the_kernels_choice(monkeypatch):
    monkeypatch.setattr(ports, "ephemeral_ports", lambda: (ports.LOWEST + 10, 60_999))
    port = ports.free_port()
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))
    assert port > 0


def test_a_taken_port_is_never_offered(monkeypatch):
    """Within a 1-port range whose port is held, every try fails and the kernel's choice is taken."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        taken = held.getsockname()[1]
        monkeypatch.setattr(ports, "LOWEST", taken)
        monkeypatch.setattr(ports, "ephemeral_ports", lambda: (taken + 1001, 60_999))
        monkeypatch.setattr(ports.random, "randrange", lambda a, b: taken)
        assert ports.free_port() != taken

"""What every test server here starts with: a TCP listener on 127.0.0.1:PORT, and "ready" printed once
it listens (what tests/support.py `serving` waits for)."""

import socket


def listening(port, backlog=128):
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(backlog)
    print("ready", flush=True)
    return listener

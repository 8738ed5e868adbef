"""A server that goes away mid-run: usage `vanishing_server.py PORT SECONDS COUNT_FILE`.

Answers each request `200 ok` and closes the connection (one request a connection), for SECONDS after
it starts listening; then it closes its listener (every connect after is refused) and writes how many
connections it accepted to COUNT_FILE: the ground truth for a generator's count of connections opened."""

import socket
import sys
import threading
import time

from listener import heads, listening


def serve(conn):
    with conn:
        for _ in heads(conn):  # (one request: the answer closes the connection)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
            return


def main(port, seconds, count_file):
    listener = listening(port)
    listener.settimeout(0.05)
    accepted, end = 0, time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            conn, _ = listener.accept()
        except socket.timeout:
            continue
        accepted += 1
        threading.Thread(target=serve, args=(conn,), daemon=True).start()
    listener.close()
    with open(count_file, "w") as f:
        f.write(str(accepted))
    time.sleep(3600)


if __name__ == "__main__":
    main(int(sys.argv[1]), float(sys.argv[2]), sys.argv[3])

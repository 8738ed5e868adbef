"""A server that reads each request and closes the connection without answering: usage
`closer.py PORT`. On SIGTERM it prints the requests it read, as JSON {"METHOD path": count}, and exits."""

import json
import signal
import sys

from listener import listening


def main(port):
    seen = {}

    def stop(*_):
        print(json.dumps(seen), flush=True)
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)
    listener = listening(port)
    while True:
        conn, _ = listener.accept()
        with conn:
            data = conn.recv(65536)
            if data:
                key = b" ".join(data.split(b" ", 2)[:2]).decode("latin-1")
                seen[key] = seen.get(key, 0) + 1


if __name__ == "__main__":
    main(int(sys.argv[1]))

"""An XML-RPC server for custom-client locustfiles (Locust's way to test other protocols), as Locust's
examples/custom_xmlrpc_client has one: a thread per call, so calls overlap as a real server's do.

Methods: `wait(ms)` answers after ms milliseconds, `fail()` raises an XML-RPC Fault, `calls()` answers
{method: calls so far} (not itself counted): the ground truth of what the load tool sent.

usage: python xmlrpc_server.py PORT   (prints "ready" once it listens)
"""

import collections
import sys
import threading
import time
from socketserver import ThreadingMixIn
from xmlrpc.server import SimpleXMLRPCRequestHandler, SimpleXMLRPCServer


class Server(ThreadingMixIn, SimpleXMLRPCServer):
    daemon_threads = True
    request_queue_size = 1024


class QuietHandler(SimpleXMLRPCRequestHandler):
    def log_message(self, *args):
        pass


counts = collections.Counter()
lock = threading.Lock()


def count(name):
    with lock:
        counts[name] += 1


def wait(ms):
    count("wait")
    time.sleep(ms / 1000)
    return ms


def fail():
    count("fail")
    raise ValueError("the server refuses")


def calls():
    with lock:
        return dict(counts)


if __name__ == "__main__":
    server = Server(("127.0.0.1", int(sys.argv[1])), requestHandler=QuietHandler, logRequests=False)
    for f in (wait, fail, calls):
        server.register_function(f)
    print("ready", flush=True)
    server.serve_forever()

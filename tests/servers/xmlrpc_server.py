"""An XML-RPC server for custom-client locustfiles (Locust's way to test other protocols), as Locust's
examples/custom_xmlrpc_client has one: a thread per call, so calls overlap as a real server's do.

Methods: `wait(ms)` answers after ms milliseconds, `fail()` raises an XML-RPC Fault, `calls()` answers
{method: calls so far} and `peak()` the most `wait` calls in progress at once since the last `peak()`
(neither counted): the ground truth of what the load tool sent, and how many of its calls overlapped.

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
waiting = 0
most = 0


def count(name):
    with lock:
        counts[name] += 1


def wait(ms):
    global waiting, most
    count("wait")
    with lock:
        waiting += 1
        most = max(most, waiting)
    time.sleep(ms / 1000)
    with lock:
        waiting -= 1
    return ms


def peak():
    global most
    with lock:
        seen, most = most, waiting
    return seen


def fail():
    count("fail")
    raise ValueError("the server refuses")


def calls():
    with lock:
        return dict(counts)


if __name__ == "__main__":
    server = Server(("127.0.0.1", int(sys.argv[1])), requestHandler=QuietHandler, logRequests=False)
    for f in (wait, fail, calls, peak):
        server.register_function(f)
    print("ready", flush=True)
    server.serve_forever()

"""A gRPC server for the custom-client tests, as Locust's examples/grpc/hello_server.py serves its
locustfile: HelloService (hello.proto) on a pool of threads, so that calls overlap as a real server's do.
It counts every call it received (`Tally`): the ground truth of what a load tool sent, and how many of
its calls were in progress at once.

usage: python server.py PORT STUBS_DIR   (the stubs grpcio-tools generated from hello.proto; prints
"ready" once it listens)
"""

import collections
import sys
import threading
import time
from concurrent import futures

sys.path.insert(0, sys.argv[2])

import grpc
import hello_pb2
import hello_pb2_grpc

lock = threading.Lock()
calls = collections.Counter()
in_progress = 0
peak = 0


class HelloService(hello_pb2_grpc.HelloServiceServicer):
    def SayHello(self, request, context):
        global in_progress, peak
        with lock:
            calls[request.name] += 1
            in_progress += 1
            peak = max(peak, in_progress)
        try:
            time.sleep(request.delay_ms / 1000)
            if request.name == "fail":
                context.abort(grpc.StatusCode.INVALID_ARGUMENT, "the server refuses")
            return hello_pb2.HelloResponse(message=f"Hello {request.name}!")
        finally:
            with lock:
                in_progress -= 1

    def Tally(self, request, context):
        global peak
        with lock:
            seen, peak = peak, in_progress
            return hello_pb2.TallyResponse(calls=dict(calls), peak=seen)


if __name__ == "__main__":
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=64))
    hello_pb2_grpc.add_HelloServiceServicer_to_server(HelloService(), server)
    server.add_insecure_port(f"127.0.0.1:{sys.argv[1]}")
    server.start()
    print("ready", flush=True)
    server.wait_for_termination()

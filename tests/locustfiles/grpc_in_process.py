"""Locust's examples/grpc as it is written: the gRPC server runs in the load test's own process, started
by an init listener (`gevent.spawn(start_server)`) on a futures.ThreadPoolExecutor, whose threads are
greenlets under gevent's patching and whose calls `time.sleep`; the user calls it through grpc in its
gevent mode and an interceptor that fires `events.request`. Under squall the run never ended (issue 41):
the pool's threads slept on squall's timers, which stop with the run, and the interpreter's exit joined
them for ever.

GRPC_STUBS is the folder of the stubs grpcio-tools made from tests/servers/grpc/hello.proto, GRPC_PORT
the server's port (the users' -H is 127.0.0.1:GRPC_PORT), GRPC_MS each call's sleep. At `quitting` the
server's count of the calls it received (its ground truth) is written to GRPC_TALLY, as JSON."""

import json
import os
import sys
import threading
import time
from concurrent import futures

import gevent
import grpc
import grpc.experimental.gevent as grpc_gevent
from grpc_interceptor import ClientInterceptor
from locust import User, constant, events, task

sys.path.insert(0, os.environ["GRPC_STUBS"])
import hello_pb2
import hello_pb2_grpc

grpc_gevent.init_gevent()  # grpc's own threads and waits on gevent's hub

MS = int(os.environ.get("GRPC_MS", "200"))
received = []  # the names of the calls the server received
lock = threading.Lock()


class HelloService(hello_pb2_grpc.HelloServiceServicer):
    def SayHello(self, request, context):
        with lock:
            received.append(request.name)
        time.sleep(request.delay_ms / 1000)  # the example's time.sleep(1), shorter
        return hello_pb2.HelloResponse(message=f"Hello {request.name}!")


def start_server():
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=10))
    hello_pb2_grpc.add_HelloServiceServicer_to_server(HelloService(), server)
    server.add_insecure_port(f"127.0.0.1:{os.environ['GRPC_PORT']}")
    server.start()
    server.wait_for_termination()


@events.init.add_listener
def run_grpc_server(environment, **_kwargs):
    gevent.spawn(start_server)


@events.quitting.add_listener
def tally(environment, **_kwargs):
    with open(os.environ["GRPC_TALLY"], "w") as f:
        json.dump(len(received), f)


class RequestEvents(ClientInterceptor):
    """Every call the stub makes, fired as a request (the example's LocustInterceptor)."""

    def __init__(self, environment):
        super().__init__()
        self.environment = environment

    def intercept(self, method, request_or_iterator, call_details):
        start = time.perf_counter()
        response, exception, length = None, None, 0
        try:
            response = method(request_or_iterator, call_details)
            length = response.result().ByteSize()
        except grpc.RpcError as e:
            exception = e
        self.environment.events.request.fire(
            request_type="grpc",
            name=call_details.method,
            response_time=(time.perf_counter() - start) * 1000,
            response_length=length,
            response=response,
            context=None,
            exception=exception,
        )
        return response


class Greeter(User):
    wait_time = constant(0)

    def __init__(self, environment):
        super().__init__(environment)
        channel = grpc.intercept_channel(grpc.insecure_channel(self.host), RequestEvents(environment))
        self.stub = hello_pb2_grpc.HelloServiceStub(channel)

    @task
    def hello(self):
        self.stub.SayHello(hello_pb2.HelloRequest(name="locust", delay_ms=MS))

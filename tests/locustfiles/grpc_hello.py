"""A gRPC user as Locust's examples/grpc has one: grpc in its gevent mode (`init_gevent`), a channel to
the User's host (`-H 127.0.0.1:PORT`, as for Locust: host:port, no scheme), and a stub behind a
grpc_interceptor ClientInterceptor that fires `events.request` for every call (type `grpc`, named by the
method's path, the answer's size as the length, an RpcError as the failure). GRPC_STUBS is the folder of
the stubs grpcio-tools made from tests/servers/grpc/hello.proto, GRPC_MS the server's delay per call."""

import contextlib
import os
import sys
import time

import grpc
import grpc.experimental.gevent as grpc_gevent
from grpc_interceptor import ClientInterceptor
from locust import User, constant, task
from locust.exception import LocustError

sys.path.insert(0, os.environ["GRPC_STUBS"])
import hello_pb2
import hello_pb2_grpc

grpc_gevent.init_gevent()  # grpc's own threads and waits on gevent's hub

MS = int(os.environ.get("GRPC_MS", "20"))


class RequestEvents(ClientInterceptor):
    """Every call the stub makes, fired as a request."""

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


class GrpcUser(User):
    abstract = True
    stub_class = None

    def __init__(self, environment):
        super().__init__(environment)
        if self.host is None or self.stub_class is None:
            raise LocustError("You must specify the host and the stub_class.")
        channel = grpc.intercept_channel(grpc.insecure_channel(self.host), RequestEvents(environment))
        self.stub = self.stub_class(channel)


class Greeter(GrpcUser):
    stub_class = hello_pb2_grpc.HelloServiceStub
    wait_time = constant(0.01)

    @task(3)
    def hello(self):
        self.stub.SayHello(hello_pb2.HelloRequest(name="locust", delay_ms=MS))

    @task
    def refused(self):
        with contextlib.suppress(grpc.RpcError):  # the interceptor fired it as a failure
            self.stub.SayHello(hello_pb2.HelloRequest(name="fail"))

"""A custom client as Locust's documentation writes one ("Testing other systems using custom clients"):
an XML-RPC ServerProxy whose calls fire `events.request` with their time and outcome, so that they count
in the statistics like HTTP requests. XMLRPC_MS sets the server's delay per call."""

import os
import time
from xmlrpc.client import Fault, ServerProxy

from locust import User, constant, task

MS = int(os.environ.get("XMLRPC_MS", "20"))


class XmlRpcClient(ServerProxy):
    def __init__(self, host, request_event):
        super().__init__(host)
        self._request_event = request_event

    def __getattr__(self, name):
        func = ServerProxy.__getattr__(self, name)

        def wrapper(*args, **kwargs):
            request_meta = {
                "request_type": "xmlrpc",
                "name": name,
                "start_time": time.time(),
                "response_length": 0,
                "response": None,
                "context": {},
                "exception": None,
            }
            start = time.perf_counter()
            try:
                request_meta["response"] = func(*args, **kwargs)
            except Fault as e:
                request_meta["exception"] = e
            request_meta["response_time"] = (time.perf_counter() - start) * 1000
            self._request_event.fire(**request_meta)
            return request_meta["response"]

        return wrapper


class XmlRpcUser(User):
    abstract = True

    def __init__(self, environment):
        super().__init__(environment)
        self.client = XmlRpcClient(self.host, request_event=environment.events.request)


class Caller(XmlRpcUser):
    wait_time = constant(0.01)

    @task(3)
    def wait(self):
        self.client.wait(MS)

    @task
    def fail(self):
        self.client.fail()

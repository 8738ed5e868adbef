"""Event listeners that raise: Locust logs each ("Uncaught exception in event handler" and the
traceback), the other listeners and the user go on, and the run exits 2 (--exit-code-on-error when a
request failed; 1 at once if an init listener raised). The request listener raises for every /first:
the user still requests /second; test_stop's raises, and quitting still runs, the CSVs are written.
LISTENERS_FAIL=1: /second fails too; LISTENERS_INIT=1: the init listener raises."""

import os

from _bounded import count
from locust import HttpUser, constant, events, task


class U(HttpUser):
    wait_time = constant(0.05)

    @task
    def t(self):
        count(self)
        self.client.get("/first")
        self.client.get("/status/500" if os.environ.get("LISTENERS_FAIL") else "/second")


@events.init.add_listener
def on_init(environment, **_kw):
    if os.environ.get("LISTENERS_INIT"):
        raise RuntimeError("init listener boom")


@events.request.add_listener
def on_request(name, **_kw):
    if name == "/first":
        raise ValueError("request listener boom")


@events.request.add_listener
def after(name, **_kw):  # a listener after the one that raised still hears every request
    if name == "/first":
        print("AFTER_FIRST", flush=True)


@events.test_stop.add_listener
def on_test_stop(environment, **_kw):
    raise KeyError("test_stop boom")


@events.quitting.add_listener
def on_quitting_plain(environment):  # Locust fires quitting with `environment` alone, the last added first
    print("QUITTING_PLAIN", flush=True)


@events.quitting.add_listener
def on_quitting(environment, **_kw):
    print("QUITTING_RAN", flush=True)

"""Users that misbehave in ways Python allows, beside one that behaves, and a thread the file starts at
import: each misbehaving user's error is its own (counted once, that user ends), the run goes on, and
the thread keeps working. The thread's work and the well-behaved user's requests are written to
$SQUALL_TEST_OUT at test_stop."""

import json
import os
import sys
import threading
import time

from locust import HttpUser, constant, events, task

ticks = []


def background():
    while True:
        ticks.append(time.monotonic())
        time.sleep(0.05)


threading.Thread(target=background, daemon=True).start()
fine = []


@events.test_stop.add_listener
def _write(**_kw):
    with open(os.environ["SQUALL_TEST_OUT"], "w") as f:
        json.dump({"ticks": len(ticks), "fine": len(fine)}, f)


class Fine(HttpUser):
    wait_time = constant(0.1)

    @task
    def t(self):
        self.client.get("/")
        fine.append(1)


class Exits(HttpUser):
    wait_time = constant(0.1)

    @task
    def t(self):
        sys.exit(3)


class Interrupts(HttpUser):
    wait_time = constant(0.1)

    @task
    def t(self):
        raise KeyboardInterrupt()


class BadWait(HttpUser):
    @task
    def t(self):
        self.client.get("/")

    def wait_time(self):
        raise ValueError("no wait for you")

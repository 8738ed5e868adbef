"""Native users, then a request listener added a second into the run: from then on the users run in
Python, where the listener sees their requests. It writes how many it saw to $SEEN_FILE."""

import os
from pathlib import Path

import gevent
from locust import HttpUser, constant, events, task

seen = []


class Steady(HttpUser):
    wait_time = constant(0.01)

    @task
    def index(self):
        self.client.get("/a")


@events.test_start.add_listener
def listen_later(environment, **_kw):
    gevent.spawn_later(1.0, events.request.add_listener, lambda **kw: seen.append(kw["name"]))


@events.test_stop.add_listener
def write_seen(environment, **_kw):
    Path(os.environ["SEEN_FILE"]).write_text(str(len(seen)))

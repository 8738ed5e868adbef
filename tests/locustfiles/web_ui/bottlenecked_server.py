"""A server in the web UI (the behaviour of Locust's bottlenecked_server.py): the file adds `/fast` and
`/slow` (at most 4 at a time) to the web UI's Flask app, and its users, pointed at the tool's own UI
(-H its URL), request them and a path no one serves (the app's 404). ITERATIONS tasks per user."""

import threading
import time

from _bounded import count
from locust import HttpUser, constant, events, task

four_at_a_time = threading.Semaphore(4)


class Visitor(HttpUser):
    wait_time = constant(0)

    @task
    def visit(self):
        count(self)
        for path in ("/fast", "/slow", "/missing"):
            self.client.get(path)


@events.init.add_listener
def add_routes(environment, **_kw):
    assert environment.web_ui, "this file needs the web UI (not --headless)"
    app = environment.web_ui.app

    @app.route("/fast")
    def fast():
        return "fast"

    @app.route("/slow")
    def slow():
        with four_at_a_time:
            time.sleep(0.05)
        return "slow"

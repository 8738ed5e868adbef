"""Locust's bottlenecked_server.py, bounded: routes added to the web UI's Flask app (`/fast`, `/slow`
behind a semaphore of 4) are the target of the users, which the test points at the tool's own web UI
(-H http://127.0.0.1:PORT). Each user runs ITERATIONS tasks."""

import time
from threading import Semaphore

from _bounded import count
from locust import HttpUser, constant, events, task

sema = Semaphore(4)


class WebsiteUser(HttpUser):
    wait_time = constant(0)

    @task
    def index(self):
        count(self)
        self.client.get("/fast")
        self.client.get("/slow")
        self.client.get("/missing")  # the app's 404: a failure


@events.init.add_listener
def locust_init(environment, **kwargs):
    assert environment.web_ui, "you can't run this headless"

    @environment.web_ui.app.route("/slow")
    def slow():
        with sema:
            time.sleep(0.05)
        return "slow"

    @environment.web_ui.app.route("/fast")
    def fast():
        return "fast"

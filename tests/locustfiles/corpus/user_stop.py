"""Users that end themselves with Locust's `User.stop`: forced (at once, mid-task: on_stop runs, the rest of
the task never does), not forced in a task (the task finishes, then the user ends), and not forced from
another greenlet while the user waits between tasks (it ends at once, not after its wait)."""

import gevent
from locust import HttpUser, between, constant, task


class Forced(HttpUser):
    wait_time = constant(0)

    @task
    def work(self):
        self.client.get("/forced")
        assert self.stop(force=True) is True  # (never returns: the user ends here)
        self.client.get("/never")

    def on_stop(self):
        self.client.get("/forced/on_stop")


class Graceful(HttpUser):
    wait_time = constant(0)

    @task
    def work(self):
        self.client.get("/graceful")
        stopped = self.stop()
        self.client.get(f"/graceful/rest?stopped={stopped}")

    def on_stop(self):
        self.client.get("/graceful/on_stop")


class Waiting(HttpUser):
    wait_time = between(30, 30)

    def on_start(self):
        gevent.spawn_later(0.3, self.stop)

    @task
    def work(self):
        self.client.get("/waiting")

    def on_stop(self):
        self.client.get("/waiting/on_stop")

"""Locust's documented way to hold users until all have spawned: a gevent Semaphore acquired at module
level, released by a spawning_complete listener registered in init; each user waits on it in on_start.
A second, bounded semaphore lets two users at a time make their first request. Each user then makes one
task request and stops. Records when spawning completed (wall clock)."""

import time

import gevent_done
from gevent.lock import BoundedSemaphore, Semaphore
from locust import HttpUser, constant, events, task
from locust.exception import StopUser

all_users_spawned = Semaphore()
all_users_spawned.acquire()
two_at_a_time = BoundedSemaphore(2)


@events.init.add_listener
def _(environment, **_kw):
    @environment.events.spawning_complete.add_listener
    def on_spawning_complete(**_kw):
        gevent_done.record["spawned_at"] = time.time()
        all_users_spawned.release()


class Gated(HttpUser):
    wait_time = constant(0)

    def on_start(self):
        all_users_spawned.wait()
        with two_at_a_time:
            self.client.get("/gate?first", name="first")

    @task
    def once(self):
        self.client.get("/gate?task", name="task")
        raise StopUser()

    def on_stop(self):
        gevent_done.user_done(self)

"""A greenlet spawned in a task fails (ZeroDivisionError); another is killed before it ever runs. The
first is printed as gevent prints it, and counted in the run's exceptions as a task's would be."""

import gevent
import gevent_done
from locust import HttpUser, constant, task
from locust.exception import StopUser


def divide(n):
    return n / 0


class Failing(HttpUser):
    wait_time = constant(0)

    @task
    def spawn_a_failure(self):
        g = gevent.spawn(divide, 1)
        g.join()
        never = gevent.spawn(self.client.get, "/never")
        never.kill()
        gevent_done.record["failed"] = {"exception": repr(g.exception), "successful": g.successful()}
        self.client.get("/after", name="after")
        raise StopUser()

    def on_stop(self):
        gevent_done.user_done(self)

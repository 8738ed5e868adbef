"""Parallel requests the way locustfiles fan out with gevent: a Pool per task, joinall of spawned
greenlets, a background heartbeat greenlet started in on_start, an Event that gates the users."""

import gevent
from _bounded import count
from gevent.event import Event
from gevent.pool import Pool
from locust import HttpUser, constant, events, task

ready = Event()


@events.spawning_complete.add_listener
def _(user_count, **_kw):
    ready.set()


class Fanout(HttpUser):
    wait_time = constant(0)

    def on_start(self):
        ready.wait(timeout=10)
        self.beats = 0
        self.heartbeat = gevent.spawn(self._beat)

    def _beat(self):
        while self.beats < 2:
            self.client.get("/heartbeat")
            self.beats += 1
            gevent.sleep(0.05)

    @task
    def page(self):
        count(self)
        pool = Pool(3)
        for asset in ("/css", "/js", "/img", "/font"):
            pool.spawn(self.client.get, asset)
        pool.join()
        jobs = [gevent.spawn(self.client.get, f"/api/{i}", name="/api/[i]") for i in range(2)]
        gevent.joinall(jobs, timeout=10)

    def on_stop(self):
        self.heartbeat.join(timeout=5)

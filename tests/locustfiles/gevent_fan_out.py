"""Each task fans out 4 requests at once, four ways in turn (Pool.spawn and join, a Group's greenlets
joined with gevent.joinall, gevent.spawn and joinall with raise_error, Pool.map), FAN_OUT_ROUNDS times
each per user; then the user stops. Records each fan-out's wall time by way."""

import os
import time

import gevent
import gevent_done
from gevent.pool import Group, Pool
from locust import HttpUser, constant, task
from locust.exception import StopUser

ROUNDS = int(os.environ.get("FAN_OUT_ROUNDS", "2"))
FAN = 4
WAYS = ["pool", "group", "joinall", "map"]
times = gevent_done.record.setdefault("times", {way: [] for way in WAYS})


def fetch(client, way, i):
    client.get(f"/fan?way={way}&i={i}", name=f"fan {way}")


class FanOut(HttpUser):
    wait_time = constant(0)

    def on_start(self):
        self.done = 0

    @task
    def fan_out(self):
        way = WAYS[self.done % len(WAYS)]
        start = time.monotonic()
        if way == "pool":
            pool = Pool(FAN)
            for i in range(FAN):
                pool.spawn(fetch, self.client, way, i)
            pool.join()
        elif way == "group":
            group = Group()
            gevent.joinall([group.spawn(fetch, self.client, way, i) for i in range(FAN)])
        elif way == "joinall":
            gevent.joinall([gevent.spawn(fetch, self.client, way, i) for i in range(FAN)], raise_error=True)
        else:
            Pool(FAN).map(lambda i: fetch(self.client, way, i), range(FAN))
        times[way].append(time.monotonic() - start)
        self.done += 1
        if self.done == ROUNDS * len(WAYS):
            raise StopUser()

    def on_stop(self):
        gevent_done.user_done(self)

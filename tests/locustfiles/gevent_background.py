"""A background greenlet started in on_start makes a request every 0.1 s for as long as it lives;
the task makes one every 0.5 s. The run ends at -t: squall kills the background greenlets with the
users, before test_stop, whose listener records how many had ended (their `finally`) and when."""

import time

import gevent
import gevent_done
from locust import HttpUser, constant, events, task

ended = []


class Busy(HttpUser):
    wait_time = constant(0.5)

    def on_start(self):
        self.background = gevent.spawn(self.poll)

    def poll(self):
        try:
            while True:
                self.client.get("/background", name="background")
                gevent.sleep(0.1)
        finally:
            ended.append(time.time())

    @task
    def foreground(self):
        self.client.get("/foreground", name="foreground")


@events.test_stop.add_listener
def _(environment, **_kw):
    gevent_done.record.update(ended=len(ended), test_stop_at=time.time())

"""gevent's synchronisation in a task, each piece checked by its outcome (written to $SQUALL_TEST_OUT):
a JoinableQueue feeding a consumer greenlet started in on_start, an Event set by another greenlet, an
AsyncResult, gevent.Timeout around a request to a slow server ($SLOW_URL answers after 200 ms) and
around waits, with_timeout, a LifoQueue and a PriorityQueue, and, in the main greenlet, a reporter
greenlet spawned at test_start and joined at test_stop. One iteration per user, then it stops."""

import os
import time

import gevent
import gevent_done
from gevent.event import AsyncResult, Event
from gevent.queue import Empty, JoinableQueue, LifoQueue, PriorityQueue
from locust import HttpUser, constant, events, task
from locust.exception import StopUser

SLOW_URL = os.environ.get("SLOW_URL", "")
outcomes = gevent_done.record.setdefault("outcomes", {})
reporter = {}


@events.test_start.add_listener
def _start(environment, **_kw):
    stop = Event()

    def report():
        ticks = 0
        while not stop.wait(0.05):
            ticks += 1
        return ticks

    reporter.update(stop=stop, greenlet=gevent.spawn(report))


@events.test_stop.add_listener
def _stop(environment, **_kw):
    reporter["stop"].set()
    g = reporter["greenlet"]
    g.join(timeout=5)
    outcomes["reporter"] = {"ended": g.dead, "ticked": g.value is not None and g.value > 0}


class Sync(HttpUser):
    wait_time = constant(0)

    def on_start(self):
        self.items = JoinableQueue()
        self.handled = []
        self.consumer = gevent.spawn(self.consume)

    def consume(self):
        while True:
            item = self.items.get()
            self.client.get(f"/queue?item={item}", name="queue item")
            self.handled.append(item)
            self.items.task_done()

    @task
    def check_everything(self):
        got = {}
        for item in range(3):
            self.items.put(item)
        got["queue_joined"] = self.items.join(timeout=5)
        got["handled"] = sorted(self.handled)
        try:
            self.items.get(timeout=0.05)
        except Empty:
            got["empty_after_timeout"] = True

        ready = Event()
        gevent.spawn_later(0.05, ready.set)
        got["event_set"] = ready.wait(timeout=5)
        got["event_not_set"] = Event().wait(timeout=0.05)

        result = AsyncResult()
        gevent.spawn(lambda: result.set(self.client.get("/async", name="async").status_code))
        got["async_result"] = result.get(timeout=5)

        start = time.monotonic()
        with gevent.Timeout(0.05, False):
            self.client.get(SLOW_URL + "/slow", name="slow")
            got["slow_finished"] = True
        got["slow_cut_short"] = time.monotonic() - start < 0.15
        try:
            with gevent.Timeout(0.05):
                Event().wait()
        except gevent.Timeout as t:
            got["timeout_raised"] = str(t)
        got["with_timeout"] = gevent.with_timeout(0.05, gevent.sleep, 1, timeout_value="late")

        lifo, prio = LifoQueue(), PriorityQueue()
        for n in (2, 3, 1):
            lifo.put(n)
            prio.put(n)
        got["lifo"] = [lifo.get() for _ in range(3)]
        got["priority"] = [prio.get() for _ in range(3)]
        self.client.get("/done", name="done")
        outcomes[f"user{len(outcomes)}"] = got
        raise StopUser()

    def on_stop(self):
        self.consumer.kill()
        gevent_done.user_done(self)

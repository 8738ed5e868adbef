"""Imported by locustfiles whose tests need a sample of a set size: the run ends after
STOP_AFTER_REQUESTS requests (if set), so a slow or starved host takes longer instead of measuring less."""

import os

from locust import events

LIMIT = int(os.environ.get("STOP_AFTER_REQUESTS", "0"))
environment = None
count = 0


@events.init.add_listener
def _keep(environment=None, **_kw):
    globals()["environment"] = environment


@events.request.add_listener
def _count(**_kw):
    global count
    count += 1
    if count == LIMIT:
        if type(environment.runner).__module__.startswith("locust"):
            # Locust's quit() kills every user greenlet, this one first, so it must run in its own.
            import gevent

            gevent.spawn(environment.runner.quit)
        else:
            environment.runner.quit()

"""Imported by the stats_* locustfiles: a user that makes $REQUESTS requests (default 100), then stops;
the test ends once all $USERS users (default 2) have, under Locust as under squall (Locust alone
would go on until its run time). So both tools measure the same requests, a count set in advance.

Request i (from 1) goes to /status/500 when $FAIL_EVERY divides it (default 10; 0: never), is judged
a failure in a `catch_response` block (named "judged") when i % $JUDGED_EVERY == $JUDGED_EVERY // 2
(default 10; 0: never), and goes to /ok otherwise. $WAIT: seconds between requests (default 0)."""

import os

from locust import HttpUser, constant, task
from locust.exception import StopUser

REQUESTS = int(os.environ.get("REQUESTS", "100"))
USERS = int(os.environ.get("USERS", "2"))
FAIL_EVERY = int(os.environ.get("FAIL_EVERY", "10"))
JUDGED_EVERY = int(os.environ.get("JUDGED_EVERY", "10"))
WAIT = float(os.environ.get("WAIT", "0"))  # seconds between requests
done = []


def _all_done(environment):
    done.append(1)
    if len(done) == USERS:
        if type(environment.runner).__module__.startswith("locust"):
            # Locust's quit() kills every user greenlet, this one first, so it must run in its own.
            import gevent

            gevent.spawn(environment.runner.quit)
        else:
            environment.runner.quit()


class Bounded(HttpUser):
    wait_time = constant(WAIT)

    def on_start(self):
        self.made = 0

    @task
    def step(self):
        if self.made >= REQUESTS:
            _all_done(self.environment)
            raise StopUser()
        self.made += 1
        i = self.made
        if FAIL_EVERY and i % FAIL_EVERY == 0:
            self.client.get("/status/500")
        elif JUDGED_EVERY and i % JUDGED_EVERY == JUDGED_EVERY // 2:
            with self.client.get("/ok", name="judged", catch_response=True) as resp:
                resp.failure("judged bad")
        else:
            self.client.get("/ok")

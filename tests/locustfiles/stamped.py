"""Users with think time against tests/servers/stamp_server.py: each request's response time beside the
server's send time and the user's own clock before and after the call, written to $STAMPED_OUT at the
end as JSON lines [before, elapsed, after, sent], all in seconds of CLOCK_MONOTONIC."""

import json
import os
import time

from locust import FastHttpUser, between, events, task

RECORDS = []


class Stamped(FastHttpUser):
    wait_time = between(0.05, 0.1)

    @task
    def get(self):
        before = time.monotonic()
        r = self.client.get("/")
        after = time.monotonic()
        RECORDS.append([before, r.elapsed.total_seconds(), after, float(r.text)])


@events.test_stop.add_listener
def _write(**_kw):
    with open(os.environ["STAMPED_OUT"], "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in RECORDS)

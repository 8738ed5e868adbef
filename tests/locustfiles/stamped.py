"""Users with think time against tests/servers/stamp_server.py: each request's response time beside the
server's send time and the user's own clock before and after the call, written to $STAMPED_OUT at the
end as JSON lines [before, elapsed, after, sent], all in seconds of CLOCK_MONOTONIC. With $STAMPED_PATH
/hop each request is a redirect and its answer; `sent` is then when the answer would have been sent had
the second request left as the redirect arrived: the redirect's send plus the server's time on the
second request."""

import json
import os
import time

from locust import FastHttpUser, between, events, task

RECORDS = []
PATH = os.environ.get("STAMPED_PATH", "/")


class Stamped(FastHttpUser):
    wait_time = between(0.05, 0.1)

    @task
    def get(self):
        before = time.monotonic()
        r = self.client.get(PATH)
        after = time.monotonic()
        if PATH == "/hop":
            hop, received, sent = map(float, r.text.split())
            RECORDS.append([before, r.elapsed.total_seconds(), after, hop + (sent - received)])
        else:
            RECORDS.append([before, r.elapsed.total_seconds(), after, float(r.text)])


@events.test_stop.add_listener
def _write(**_kw):
    with open(os.environ["STAMPED_OUT"], "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in RECORDS)

"""Debugging one user without a load test, as with Locust's run_single_user."""

import sys

from squall import HttpUser, constant, run_single_user, task
from squall.exception import StopUser


class Once(HttpUser):
    wait_time = constant(0)
    count = 0

    @task
    def go(self):
        r = self.client.get("/ok")
        Once.count += 1
        print("status", r.status_code, flush=True)
        if Once.count == 3:
            raise StopUser()


if __name__ == "__main__":
    run_single_user(Once, host=sys.argv[1])

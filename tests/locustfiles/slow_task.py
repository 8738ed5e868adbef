import json
import os
import time

from locust import HttpUser, constant, events, task

finished = []


@events.quitting.add_listener
def report(environment, **kw):
    with open(os.environ["SQUALL_TEST_OUT"], "w") as f:
        json.dump({"finished": len(finished)}, f)


class Slow(HttpUser):
    wait_time = constant(0.01)

    @task
    def long_task(self):
        self.client.get("/ok")
        time.sleep(1.5)  # cooperative
        finished.append(1)

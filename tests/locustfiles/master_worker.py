"""Locust's distributed idioms, for `--master`/`--worker` (tests/test_distributed.py): the runner each
process sees, test_start on master and workers, custom messages both ways, report_to_master and
worker_report. The master writes what it saw to $MASTER_OUT at quitting; the workers' side shows at
the server: each worker asks for /config/<value> once the master's message reached it.

`PATH_PREFIX` is what the test rewrites on disk after the master has read the file: requests to
/disk/... would mean a worker ran the copy on disk rather than the master's."""

import json
import os

from locust import HttpUser, constant, events, task
from locust.runners import MasterRunner, WorkerRunner

PATH_PREFIX = "/master"

seen = {"runner": None, "test_start": 0, "hellos": [], "reports": 0, "report_users": [], "clients": set()}


def on_hello(environment, msg, **kw):
    seen["hellos"].append([msg.data, msg.node_id in environment.runner.clients])


def on_config(environment, msg, **kw):
    environment.runner.config = msg.data
    environment.runner.config_ready = True


@events.init.add_listener
def on_init(environment, runner, **kw):
    seen["runner"] = type(runner).__name__
    if isinstance(runner, MasterRunner):
        runner.register_message("hello", on_hello)
    elif isinstance(runner, WorkerRunner):
        runner.register_message("config", on_config)
        runner.config_ready = False


@events.test_start.add_listener
def on_test_start(environment, **kw):
    seen["test_start"] += 1
    runner = environment.runner
    if isinstance(runner, MasterRunner):
        runner.send_message("config", {"value": "abc"})
    elif isinstance(runner, WorkerRunner):
        runner.send_message("hello", {"index": runner.worker_index, "count": runner.worker_count})


@events.report_to_master.add_listener
def on_report(client_id, data, **kw):
    data["custom_users"] = 1


@events.worker_report.add_listener
def on_worker_report(client_id, data, **kw):
    seen["reports"] += 1
    seen["clients"].add(client_id)
    if "custom_users" in data:
        seen["report_users"].append(data["custom_users"])


@events.quitting.add_listener
def on_quitting(environment, **kw):
    if isinstance(environment.runner, MasterRunner) and os.environ.get("MASTER_OUT"):
        out = dict(seen, clients=len(seen["clients"]), report_users=sorted(set(seen["report_users"])))
        out["requests"] = environment.stats.total.num_requests
        with open(os.environ["MASTER_OUT"], "w") as f:
            json.dump(out, f)


class Visitor(HttpUser):
    wait_time = constant(0.05)

    def on_start(self):
        self.asked = False

    @task
    def visit(self):
        runner = self.environment.runner
        if not self.asked and getattr(runner, "config_ready", False) and runner.greeted is False:
            runner.greeted = True
            self.asked = True
            self.client.get(f"/config/{runner.config['value']}/{runner.worker_index}")
        self.client.get(f"{PATH_PREFIX}/page")


@events.init.add_listener
def _greeted(environment, runner, **kw):
    runner.greeted = False

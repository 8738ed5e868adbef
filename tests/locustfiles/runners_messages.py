"""Locust's runner surface seen from a locustfile: the STATE_* constants, `runner.state` and
`user_count` from tasks, custom messages sent and received in one process (`register_message`,
`send_message`), `web_ui` when headless. Written to $STATS_OUT (JSON) at quitting."""

import json
import os

from locust import HttpUser, constant, events, runners, task
from locust.exception import StopUser
from locust.runners import (
    STATE_CLEANUP,
    STATE_INIT,
    STATE_MISSING,
    STATE_RUNNING,
    STATE_SPAWNING,
    STATE_STOPPED,
    STATE_STOPPING,
    LocalRunner,
    MasterRunner,
    WorkerRunner,
)
from stats_bounded import _all_done  # the test ends when the users are done, under Locust too

STATES = [STATE_INIT, STATE_SPAWNING, STATE_RUNNING, STATE_CLEANUP, STATE_STOPPING, STATE_STOPPED, STATE_MISSING]
seen = {
    "constants": STATES,
    "received": [],
    "task_states": [],
    "user_counts": [],
}


def on_greeting(environment, msg, **kw):
    seen["received"].append(
        {
            "type": msg.type,
            "data": msg.data,
            "node_id": msg.node_id,
            "environment_is_env": environment is seen_env[0],
            "extra_kwargs": sorted(kw),
            "repr": repr(msg),
        }
    )


seen_env = []


@events.init.add_listener
def on_init(environment, runner, web_ui=None, **kw):
    seen_env.append(environment)
    seen["runner_kind"] = [
        isinstance(runner, LocalRunner),
        isinstance(runner, MasterRunner),
        isinstance(runner, WorkerRunner),
        runner is environment.runner,
    ]
    seen["web_ui"] = [web_ui is None, environment.web_ui is None]
    seen["local_ids"] = [runner.worker_index, runner.worker_count]
    if not isinstance(runner, MasterRunner):
        runner.register_message("greeting", on_greeting)
        runner.register_message("other", on_greeting, concurrent=True)
    try:
        runner.register_message("greeting", on_greeting)
    except Exception as e:
        seen["duplicate"] = str(e)


@events.quitting.add_listener
def on_quitting(environment, **kw):
    seen["quitting_state"] = environment.runner.state
    seen["module_constant"] = runners.STATE_STOPPED
    with open(os.environ["STATS_OUT"], "w") as f:
        json.dump(seen, f, indent=1)


class Messenger(HttpUser):
    wait_time = constant(0.01)

    def on_start(self):
        self.made = 0

    @task
    def step(self):
        runner = self.environment.runner
        if self.made >= 3:
            _all_done(self.environment)
            raise StopUser()
        self.made += 1
        seen["task_states"].append(runner.state in (STATE_SPAWNING, STATE_RUNNING))
        seen["user_counts"].append(runner.user_count)
        self.client.get("/ok")
        runner.send_message("greeting", {"n": self.made, "list": [1, "two"]})
        if self.made == 1:
            runner.send_message("other")
            runner.send_message("nobody listens", 42)

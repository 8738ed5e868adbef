"""Runner checks as real locustfiles do them: isinstance tests against Locust's runner classes to set
up only where the users run, the STATE_* constants, runner.user_count and custom messages."""

from _bounded import count
from locust import HttpUser, constant, events, task
from locust.runners import STATE_RUNNING, STATE_SPAWNING, LocalRunner, MasterRunner, WorkerRunner

seen = {}


@events.init.add_listener
def on_init(environment, **_kw):
    if not isinstance(environment.runner, MasterRunner):
        environment.runner.register_message("note", lambda environment, msg, **kw: seen.update(note=msg.data))
    seen["local"] = isinstance(environment.runner, LocalRunner) and not isinstance(environment.runner, WorkerRunner)


@events.test_start.add_listener
def on_start(environment, **_kw):
    environment.runner.send_message("note", {"from": "test_start"})


class Checker(HttpUser):
    wait_time = constant(0)

    @task
    def check(self):
        count(self)
        runner = self.environment.runner
        state = "live" if runner.state in (STATE_SPAWNING, STATE_RUNNING) else "other"
        self.client.get(
            f"/state/{state}", params={"local": seen.get("local"), "note": seen.get("note", {}).get("from")}
        )

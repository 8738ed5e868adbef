"""A shape of 2 users for 3 s, run with -t 1s: Locust ignores -t for a shape (it warns so) and runs it
to its end; test_start sees the first tick's users as the runner's target."""

from locust import HttpUser, LoadTestShape, constant, events, task


class U(HttpUser):
    wait_time = constant(0.5)

    def on_start(self):
        self.client.get(f"/target/{U.target}")

    @task
    def t(self):
        self.client.get("/shaped")


class Shape(LoadTestShape):
    def tick(self):
        return (2, 10) if self.get_run_time() < 3 else None


@events.test_start.add_listener
def started(environment, **_kw):
    U.target = environment.runner.target_user_count

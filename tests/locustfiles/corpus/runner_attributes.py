"""What files read of Locust's runner and environment besides the usual: `runner.exceptions` (keyed by the
hash of the traceback: count, msg, traceback, nodes), `runner.log_exception`, `runner.user_greenlets`
(each greenlet's `args[0]` its user), and the environment's `stop_timeout`, `catch_exceptions`,
`reset_stats`, `available_user_classes`, `user_classes_by_name`, with the parsed options' `processes` and
`stop_timeout`; user_error's user_instance (the TaskSet that ran the task). Printed, for the test to
compare with Locust's."""

from _bounded import count
from locust import HttpUser, TaskSet, constant, events, task


class Nested(TaskSet):
    @task
    def fail_then_leave(self):
        self.turns = getattr(self, "turns", 0) + 1
        if self.turns == 1:
            raise ValueError("nested boom")  # user_error's user_instance: this TaskSet
        self.interrupt(reschedule=False)


class Chosen(HttpUser):
    wait_time = constant(0)

    @task
    def work(self):
        count(self)
        self.client.get("/work")
        if self.done == 1:
            runner = self.environment.runner
            mine = [g for g in runner.user_greenlets if g.args[0] is self]
            print("user_greenlets", type(runner.user_greenlets).__name__, len(mine), flush=True)
        if self.done == 2:
            tb = "Traceback (most recent call last):\nLogged: by hand\n"
            self.environment.runner.log_exception("local", "logged by hand", tb)
            raise ValueError("boom")  # user_error's user_instance: the user's DefaultTaskSet
        if self.done == 3:
            Nested(self).run()


class NotChosen(HttpUser):
    @task
    def work(self):
        self.client.get("/never")


@events.user_error.add_listener
def user_error(user_instance, exception, **_kw):
    print("user_error", type(user_instance).__name__, type(user_instance.user).__name__, exception, flush=True)


@events.test_stop.add_listener
def report(environment, **_kw):
    runner = environment.runner
    for key, row in sorted(runner.exceptions.items(), key=lambda kv: kv[1]["msg"]):
        print("exception", row["msg"], row["count"], sorted(row["nodes"]), key == hash(row["traceback"]), flush=True)
    print("users left", len(runner.user_greenlets), flush=True)
    options = environment.parsed_options
    print("stop_timeout", repr(environment.stop_timeout), repr(options.stop_timeout), flush=True)
    print("processes", options.processes, flush=True)
    print("catch_exceptions", environment.catch_exceptions, "reset_stats", environment.reset_stats, flush=True)
    print("available", sorted(environment.available_user_classes), sorted(environment.user_classes_by_name))

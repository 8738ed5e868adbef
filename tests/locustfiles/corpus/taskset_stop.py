"""TaskSets' on_stop at the end of a run, as Locust runs it (with --stop-timeout): a user waiting between
its tasks in a nested TaskSet is stopped in its wait (each TaskSet's on_stop runs, innermost first, then
the user's), and a user whose task straddles the end finishes it, then stops at its wait (the same)."""

import gevent
from locust import HttpUser, TaskSet, constant, task


class Waiting(TaskSet):
    wait_time = constant(30)  # the run ends during this wait

    def on_start(self):
        self.client.get("/waiter/inner/on_start")

    @task
    def work(self):
        self.client.get("/waiter/inner/work")

    def on_stop(self):
        self.client.get("/waiter/inner/on_stop")


class Outer(TaskSet):
    tasks = [Waiting]

    def on_stop(self):
        self.client.get("/waiter/outer/on_stop")


class Waiter(HttpUser):
    tasks = [Outer]
    wait_time = constant(0)

    def on_stop(self):
        self.client.get("/waiter/on_stop")


class Straddling(TaskSet):
    @task
    def work(self):
        self.client.get("/busy/work")
        gevent.sleep(6)  # from before the end of the run (-t 4s) to within --stop-timeout
        self.client.get("/busy/work/done")

    def on_stop(self):
        self.client.get("/busy/inner/on_stop")


class Busy(HttpUser):
    tasks = [Straddling]
    wait_time = constant(0)

    def on_stop(self):
        self.client.get("/busy/on_stop")

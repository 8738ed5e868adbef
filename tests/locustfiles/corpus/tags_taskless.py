"""-T x: B's only task is a TaskSet with no task tagged x, so B (and the TaskSet) has no task left.
Locust warns of both and runs B all the same, each of its users' turns an error; A runs its tagged
task."""

from _bounded import count
from locust import HttpUser, TaskSet, constant, tag, task


class Inner(TaskSet):
    @task
    def untagged(self):
        self.client.get("/inner")


class A(HttpUser):
    wait_time = constant(0.05)

    @tag("x")
    @task
    def a(self):
        count(self)
        self.client.get("/a")

    @task
    def b(self):
        self.client.get("/not-tagged")


class B(HttpUser):
    wait_time = constant(0.05)
    tasks = [Inner]

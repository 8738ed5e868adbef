"""A host with a path (`-H http://host:port/en/latest/`): Locust joins it and a request's URL as text,
so "/" is /en/latest//, "a" is /en/latest/a and an absolute URL stays whole. Both clients, each path
once per iteration; HttpUser names a request by the path it requested, FastHttpUser by the URL it was
given."""

from _bounded import count
from locust import FastHttpUser, HttpUser, TaskSet, constant, task

PATHS = ("/", "/a", "a", "", "?q=1", "/b?x=1")


class Paths(TaskSet):
    @task
    def each(self):
        count(self)
        for path in PATHS:
            self.client.get(path)
        self.client.get(self.user.host.split("/en/")[0] + "/absolute")
        self.client.get("/p", params={"k": "v"})
        with self.client.rename_request("renamed"):
            self.client.get("/r")


class Requests(HttpUser):
    wait_time = constant(0)
    tasks = [Paths]


class Fast(FastHttpUser):
    wait_time = constant(0)
    tasks = [Paths]

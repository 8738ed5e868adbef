"""Idioms Locust answers with an error: a with-block without catch_response, success() on a response
that was not caught, a relative URL without its leading slash, a keyword requests does not take. Each
is an exception in the task (the exceptions table), and the requests that were made are the same;
and requests renamed in their with-block through `request_meta`.
A SequentialTaskSet, so that each user runs each task the same number of times under both tools."""

from _bounded import count
from locust import HttpUser, SequentialTaskSet, constant, task


class Steps(SequentialTaskSet):
    @task
    def no_catch(self):
        count(self)
        with self.client.get("/a") as r:
            r.success()

    @task
    def success_without_catch(self):
        count(self)
        self.client.get("/b").success()

    @task
    def no_slash(self):
        count(self)
        self.client.post("graphql", json={"query": "{ x }"})

    @task
    def unknown_keyword(self):
        count(self)
        self.client.get("/c", nonsense=1)

    @task
    def caught(self):
        count(self)
        with self.client.get("/status/500", catch_response=True) as r:
            if r.status_code == 500:
                r.success()
        with self.client.get("/d", catch_response=True) as r:
            r.failure("judged bad")
        with self.client.get("/e", catch_response=True):
            raise KeyError("not a ResponseError: the request is not reported")

    @task
    def renamed(self):
        count(self)
        # Renamed in the block through Locust's request_meta: recorded under the new name.
        with self.client.get("/items/7", catch_response=True) as r:
            r.request_meta["name"] = "/items/[id]"
        with self.client.get("/items/8", catch_response=True) as r:
            r.request_meta["name"] = "/items/[id]"
            r.failure("renamed and failed")


class Idioms(HttpUser):
    wait_time = constant(0)
    tasks = [Steps]

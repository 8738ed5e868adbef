"""FastHttpUser's API as Locust 2.47 has it: `RestResponseContextManager` imports from
locust.contrib.fasthttp (an annotation: `rest()` yields a ResponseContextManager with `js`); an empty
HTTP method is geventhttpclient's ValueError in the task (the exceptions table), nothing sent."""

from _bounded import count
from locust import FastHttpUser, SequentialTaskSet, constant, task
from locust.contrib.fasthttp import RestResponseContextManager


class Steps(SequentialTaskSet):
    @task
    def rest(self):
        count(self)
        with self.user.rest("GET", "/rest") as resp:
            kind = "rest" if isinstance(resp, RestResponseContextManager) else type(resp).__name__
            ok = resp.js["ok"]
        self.client.get(f"/yielded/{kind}/{ok}")

    @task
    def empty_method(self):
        count(self)
        self.client.request("", "/empty")


class Fast(FastHttpUser):
    wait_time = constant(0)
    tasks = [Steps]

"""A MarkovTaskSet that draws: after `hub`, `left` with weight 3 and `right` with weight 1 (a dict), and
each side goes back to the hub (a list of names and a list of pairs). Each user runs ITERATIONS tasks;
the test compares the share of `left` among the draws with 3/4 under both tools."""

from _bounded import count
from locust import HttpUser, MarkovTaskSet, constant, transition, transitions


class Walk(MarkovTaskSet):
    @transitions({"left": 3, "right": 1})
    def hub(self):
        count(self)
        self.client.get("/walk/hub")

    @transitions(["hub"])
    def left(self):
        count(self)
        self.client.get("/walk/left")

    @transitions([("hub", 1)])
    @transition("hub")
    def right(self):
        count(self)
        self.client.get("/walk/right")


class Walker(HttpUser):
    wait_time = constant(0)
    tasks = [Walk]

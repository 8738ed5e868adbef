"""A MarkovTaskSet (Locust 2.38) whose chain is fixed, so that both tools make the same requests: each
of Locust's ways to declare transitions (@transition, stacked, @transitions with a dict, a list of
names, a list of pairs) leads to exactly one next task. tests/test_locust_corpus.py's
test_markov_weights_draw_as_locusts checks the draw itself."""

from _bounded import count
from locust import HttpUser, constant
from locust.user.markov_taskset import MarkovTaskSet, transition, transitions


class Checkout(MarkovTaskSet):
    def on_start(self):
        self.client.get("/markov/start")

    @transition("browse")
    def index(self):
        count(self)
        self.client.get("/markov/index")

    @transition("cart", weight=2)
    @transition("cart")  # the same target again: its weight is replaced, still one next task
    def browse(self):
        count(self)
        self.client.get("/markov/browse")

    @transitions({"pay": 3})
    def cart(self):
        count(self)
        self.client.post("/markov/cart", json={"item": 1})

    @transitions(["receipt"])
    def pay(self):
        count(self)
        self.client.post("/markov/pay")

    @transitions([("index", 4)])
    def receipt(self):
        count(self)
        self.client.get("/markov/receipt")


class Shopper(HttpUser):
    wait_time = constant(0)
    tasks = [Checkout]

"""Users whose tasks are requests only, with fixed arguments: squall runs them natively (in the engine),
every one of its features in use: on_start's login cookie, weights, names, headers, params, JSON and form
bodies, a redirect, a failing status, HEAD and DELETE, two wait times, two clients."""

from locust import FastHttpUser, HttpUser, between, constant_throughput, task


class Shop(HttpUser):
    wait_time = constant_throughput(20)  # a task every 50 ms at most

    def on_start(self):
        self.client.post("/login", json={"user": "u"})

    @task(3)
    def browse(self):
        self.client.get("/items?page=2", name="items", headers={"X-Trace": "t1"})

    @task
    def buy(self):
        self.client.post("/cart", json={"id": 7, "qty": [1, 2]})
        self.client.get("/redirect/done")
        self.client.get("/status/503")
        self.client.head("/items")


class Api(FastHttpUser):
    wait_time = between(0.02, 0.04)

    @task
    def ping(self):
        self.client.get("/ping", params={"q": "x y"})
        self.client.post("/form", data={"a": "1", "b": "two"})
        self.client.delete("/things/1")

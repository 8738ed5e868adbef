"""The file people write (FastHttpUser): a login in on_start whose token goes in each call's headers
(Locust's FastHttpSession has no session-wide `headers`), URLs built
per call with a random id and grouped by `name=`, responses checked with catch_response, JSON posted
and read back. bench/script_bench.py runs it beside the one-task files; shop_think.py is the same user
with think time, shop_httpuser.py the requests-style HttpUser file."""

import random

from locust import FastHttpUser, constant, task


class ShopUser(FastHttpUser):
    abstract = True  # the tasks; the users below say how long they think

    def on_start(self):
        r = self.client.post("/api/login", json={"username": "bench", "password": "secret"})
        self.auth = {"Authorization": f"Bearer {r.json()['token']}"}

    @task(4)
    def view_item(self):
        item_id = random.randint(1, 10_000)
        with self.client.get(
            f"/api/items/{item_id}", name="/api/items/[id]", headers=self.auth, catch_response=True
        ) as r:
            if r.status_code != 200:
                r.failure(f"status {r.status_code}")
            elif '"name"' not in r.text:
                r.failure("no name in the item")

    @task(2)
    def search(self):
        page = random.randint(1, 20)
        r = self.client.get(f"/api/items?page={page}&q=widget", name="/api/items?page=[n]", headers=self.auth)
        if len(r.content) == 0:
            print("empty page")

    @task(1)
    def add_to_cart(self):
        item = {"item_id": random.randint(1, 10_000), "quantity": random.randint(1, 3)}
        with self.client.post("/api/cart", json=item, headers=self.auth, catch_response=True) as r:
            if r.json().get("ok") is not True:
                r.failure("not added")

    @task(1)
    def home(self):
        self.client.get("/")


class Shop(ShopUser):
    wait_time = constant(0)

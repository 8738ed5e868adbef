"""The file people write, requests style (HttpUser): a session token in on_start, headers and params
per call, raise_for_status, JSON posted and the response's JSON read, f-string URLs grouped by `name=`."""

import random

from locust import HttpUser, constant, task


class Api(HttpUser):
    wait_time = constant(0)

    def on_start(self):
        resp = self.client.post("/api/login", json={"username": "bench", "password": "secret"})
        resp.raise_for_status()
        self.token = resp.json()["token"]
        self.client.headers.update({"Authorization": f"Bearer {self.token}", "Accept": "application/json"})

    @task(4)
    def get_order(self):
        order_id = random.randint(1, 100_000)
        with self.client.get(f"/api/orders/{order_id}", name="/api/orders/{id}", catch_response=True) as resp:
            data = resp.json()
            if data.get("id") is None:
                resp.failure(f"order {order_id} has no id")
            else:
                resp.success()

    @task(2)
    def list_orders(self):
        resp = self.client.get("/api/orders", params={"limit": 20, "offset": random.randint(0, 50) * 20})
        resp.raise_for_status()

    @task(1)
    def create_order(self):
        payload = {"sku": f"SKU-{random.randint(1, 500)}", "quantity": random.randint(1, 5), "note": "bench"}
        resp = self.client.post("/api/orders", json=payload, headers={"X-Request-Source": "bench"})
        if resp.status_code == 200:
            _ = resp.json()["id"]

    @task(1)
    def health(self):
        self.client.get("/")

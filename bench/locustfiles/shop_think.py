"""bench/locustfiles/shop.py's user with think time: between(0.1, 0.2), as script_bench's think rows."""

from locust import between
from shop import ShopUser


class ShopThinking(ShopUser):
    wait_time = between(0.1, 0.2)

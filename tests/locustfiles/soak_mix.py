"""Mixed HTTP users for the soak test: mix.py's users (several endpoints, bodies, a TaskSet) with a
human think time instead of mix.py's near-zero one."""

import mix
from locust import between


class Shopper(mix.Shopper):
    wait_time = between(0.2, 0.6)

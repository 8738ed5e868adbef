"""Users for other clients, as in Locust's `locust.contrib`: `fasthttp` and `mqtt`."""

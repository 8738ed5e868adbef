"""Users for other clients, as in Locust's `locust.contrib`: `fasthttp` and `mqtt` (on the engine), and
`socketio`, `dns`, `mongodb`, `postgres` and `oai` (each on its library, loaded when a file imports it:
squall.locust_compat). Locust's other contrib modules (milvus, qdrant, ...) run from Locust's own source."""

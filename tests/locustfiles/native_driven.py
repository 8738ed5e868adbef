"""Native users that think, a request a task: the engine's passes send and read their requests
(crates/squall-engine/src/script/native.rs `send_now`, `receive_now`), and leave what one read cannot
finish to the user's own exchange (tests/test_native_users.py)."""

from locust import FastHttpUser, between, task


class Driven(FastHttpUser):
    wait_time = between(0.02, 0.04)

    @task
    def index(self):
        self.client.get("/")


class Late(FastHttpUser):
    """Requests past their timeout, each a failure at 0.3 s."""

    network_timeout = 0.3
    wait_time = between(0.02, 0.04)

    @task
    def index(self):
        self.client.get("/")

"""Certificate checks as requests and FastHttpUser decide them, against a self-signed server: HttpUser
verifies unless the session or the call says verify=False; FastHttpUser does not unless insecure=False.
Run one class at a time (its name on the command line)."""

from _bounded import count
from locust import FastHttpUser, HttpUser, constant, task


class Verified(HttpUser):
    wait_time = constant(0)

    @task
    def get(self):
        count(self)
        self.client.get("/")


class SessionUnverified(Verified):
    def on_start(self):
        self.client.verify = False


class CallUnverified(HttpUser):
    wait_time = constant(0)

    @task
    def get(self):
        count(self)
        self.client.get("/", verify=False)


class Fast(FastHttpUser):
    wait_time = constant(0)

    @task
    def get(self):
        count(self)
        self.client.get("/")


class FastStrict(Fast):
    insecure = False

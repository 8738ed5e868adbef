"""One user that follows a redirect loop a few times (requests and Locust fail it: TooManyRedirects)."""

from locust import HttpUser, constant, task
from locust.exception import StopUser


class Looping(HttpUser):
    wait_time = constant(0)
    done = 0

    @task
    def loop(self):
        self.client.get("/loop")
        Looping.done += 1
        if Looping.done == 3:
            raise StopUser()

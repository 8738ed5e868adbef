import time

from locust import HttpUser, constant, task


class Sleeper(HttpUser):
    wait_time = constant(0)

    @task
    def nap(self):
        time.sleep(0.2)  # cooperative while squall runs the file: the other users go on
        self.client.get("/ok", name="after nap")


class Spinner(HttpUser):
    wait_time = constant(0)
    fixed_count = 1

    @task
    def spin(self):
        self.client.get("/ok", name="before spin")
        while True:
            pass

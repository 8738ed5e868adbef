from locust import HttpUser, task


class Broken(HttpUser):
    @task
    def oops(self)
        pass

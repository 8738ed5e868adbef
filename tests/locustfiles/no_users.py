from locust import HttpUser


class Abstract(HttpUser):
    abstract = True

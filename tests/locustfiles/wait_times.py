from locust import HttpUser, between, constant_pacing, constant_throughput, task


class Paced(HttpUser):
    wait_time = constant_pacing(0.5)

    @task
    def paced(self):
        self.client.get("/ok", name="paced")


class Throughput(HttpUser):
    wait_time = constant_throughput(4)

    @task
    def thru(self):
        self.client.get("/ok", name="throughput")


class Between(HttpUser):
    wait_time = between(0.2, 0.3)

    @task
    def between(self):
        self.client.get("/ok", name="between")

from locust import HttpUser, constant, tag, task


class Tagged(HttpUser):
    wait_time = constant(0.01)

    @tag("read")
    @task
    def read(self):
        self.client.get("/ok", name="read")

    @tag("write", "slow")
    @task
    def write(self):
        self.client.post("/echo", data="x", name="write")

    @task
    def untagged(self):
        self.client.get("/ok", name="untagged")

from locust import FastHttpUser, constant, task


class Judging(FastHttpUser):
    wait_time = constant(0)

    @task
    def index(self):
        with self.client.get("/", catch_response=True) as response:
            if response.status_code != 200:
                response.failure(f"status {response.status_code}")

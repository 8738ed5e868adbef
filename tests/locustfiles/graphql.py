from locust import HttpUser, constant, task


class Gql(HttpUser):
    wait_time = constant(0.01)

    @task
    def metrics(self):
        r = self.client.graphql("query getBaseMetrics { metrics { count } }", variables={"unit": 7})
        assert r.json()["data"]["echo"] == {"unit": 7}

    @task
    def broken(self):
        self.client.graphql("query brokenQuery { broken }")

    @task
    def tolerated(self):
        with self.client.graphql("query brokenQuery { broken }", name="GQL tolerated", catch_response=True) as r:
            r.success()

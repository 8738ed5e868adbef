"""A path without its slash on a host without a path: Locust joins them as text, so "graphql" on
http://host:port is http://host:portgraphql, whose port fails to parse: requests' InvalidURL ("Failed to
parse: 'host:portgraphql' is not a valid host or port") raised into the task, in the exceptions table,
and nothing sent. The request before it is sent as usual."""

from _bounded import count
from locust import HttpUser, constant, task


class Unslashed(HttpUser):
    wait_time = constant(0)

    @task
    def calls(self):
        count(self)
        self.client.get("/first")
        self.client.get("graphql")

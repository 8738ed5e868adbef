"""Options a locustfile adds to Locust's parser, with Locust's keywords (env_var, include_in_web_ui,
is_secret), read back from environment.parsed_options in tasks."""

from _bounded import count
from locust import HttpUser, constant, events, task


@events.init_command_line_parser.add_listener
def _(parser):
    parser.add_argument("--api-version", type=str, default="1", env_var="CORPUS_API_VERSION", help="API version")
    parser.add_argument("--api-key", default="none", is_secret=True, help="the API key")
    parser.add_argument("--batch", type=int, default=2, include_in_web_ui=False, help="items per batch")


class Configured(HttpUser):
    wait_time = constant(0)

    @task
    def batch(self):
        count(self)
        opts = self.environment.parsed_options
        headers = {"X-Api-Version": opts.api_version, "Authorization": f"Key {opts.api_key}"}
        for i in range(opts.batch):
            self.client.post("/batch", json={"item": i}, headers=headers)

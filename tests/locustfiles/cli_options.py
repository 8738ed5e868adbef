"""A locustfile's own options, declared with the keywords Locust's parser takes (env_var,
include_in_web_ui, is_secret); the values the run got are written to SQUALL_TEST_OUT."""

import json
import os

from locust import HttpUser, constant, events, task


@events.init_command_line_parser.add_listener
def _options(parser):
    parser.add_argument("--api-token", default="none", env_var="CLI_API_TOKEN", is_secret=True, help="a secret")
    group = parser.add_argument_group("custom")
    group.add_argument("--tenant", default="t0", env_var="CLI_TENANT", include_in_web_ui=False, help="a tenant")


@events.test_start.add_listener
def _seen(environment, **_kw):
    o = environment.parsed_options
    with open(os.environ["SQUALL_TEST_OUT"], "w") as f:
        json.dump({"api_token": o.api_token, "tenant": o.tenant, "num_users": o.num_users}, f)


class Plain(HttpUser):
    wait_time = constant(0.1)

    @task
    def go(self):
        self.client.get("/ok")

import json
import os

from locust import HttpUser, constant, events, task


@events.init_command_line_parser.add_listener
def add_options(parser):
    parser.add_argument("--greeting", default="hello", help="a locustfile's own option")


@events.test_start.add_listener
def remember(environment, **kw):
    with open(os.environ["SQUALL_TEST_OUT"], "w") as f:
        json.dump({"greeting": environment.parsed_options.greeting}, f)


class Greeter(HttpUser):
    wait_time = constant(0.1)

    @task
    def greet(self):
        self.client.get("/ok")

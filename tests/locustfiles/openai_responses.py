"""An OpenAIUser (locust.contrib.oai) as Locust's examples/openai_ex.py writes one, against the API at
OPENAI_BASE_URL (tests/servers/openai_server.py): three requests in four ask the model `wait-OAI_MS`
(answered after OAI_MS ms), the fourth asks one the server refuses, renamed with `rename_request`."""

import contextlib
import os

import openai
from locust import constant, task
from locust.contrib.oai import OpenAIUser

MS = int(os.environ.get("OAI_MS", "20"))


class Asker(OpenAIUser):
    wait_time = constant(0.01)

    @task(3)
    def ask(self):
        self.client.responses.create(model=f"wait-{MS}", input="Say hello")

    @task
    def refused(self):
        with self.client.rename_request("refused"), contextlib.suppress(openai.BadRequestError):
            self.client.responses.create(model="fail", input="Say hello")

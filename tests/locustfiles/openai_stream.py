"""An OpenAIUser (locust.contrib.oai) streaming chat completions from tests/servers/openai_server.py
(`stream-5-40`: 5 chunks 40 ms apart, then [DONE]); each task appends to OUT the time.perf_counter()
of each chunk the SDK handed over, and the run stops after TASKS tasks."""

import json
import os
import time

from locust import constant, task
from locust.contrib.oai import OpenAIUser

OUT, TASKS = os.environ["OUT"], int(os.environ.get("TASKS", "3"))
done = 0


class Streamer(OpenAIUser):
    wait_time = constant(0)

    @task
    def chat(self):
        global done
        if done >= TASKS:
            return
        t0 = time.perf_counter()
        chunks = self.client.chat.completions.create(
            model="stream-5-40", messages=[{"role": "user", "content": "Say hello"}], stream=True
        )
        at, text = [], ""
        for chunk in chunks:
            at.append(time.perf_counter())
            text += chunk.choices[0].delta.content or ""
        with open(OUT, "a") as f:
            f.write(json.dumps({"t0": t0, "at": at, "text": text}) + "\n")
        done += 1
        if done == TASKS:
            self.environment.runner.quit()

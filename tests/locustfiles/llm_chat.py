"""One user streaming chat completions from tests/servers/sse_server.py's OpenAI-compatible endpoint
as such files are written without the SDK (`json=`, `stream=True`, reading the `data:` lines), until
STOP_AFTER_REQUESTS."""

import json
import os

import stop_after  # noqa: F401  (ends the run after a set number of requests)
from locust import HttpUser, constant, task

QUERY = f"first={os.environ.get('FIRST_MS', 50)}&ms={os.environ.get('GAP_MS', 20)}"


class Chat(HttpUser):
    wait_time = constant(0)

    @task
    def chat(self):
        body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True, "max_tokens": 8}
        r = self.client.post(f"/v1/chat/completions?{QUERY}", json=body, stream=True, name="chat")
        text = ""
        for line in r.iter_lines():
            if line.startswith(b"data: {"):
                text += "".join(c["delta"].get("content", "") for c in json.loads(line[6:])["choices"])
        assert text == "".join(f" tok{i}" for i in range(8)), text

"""One user streaming chat completions from tests/servers/sse_server.py's OpenAI-compatible endpoint
as such files are written without the SDK (`json=`, `stream=True`, reading the `data:` lines), until
it has read STOP_AFTER_STREAMS of them whole (a streamed request is counted at its head, so the run
ends after a stream's last line, not at a request count)."""

import json
import os

from locust import HttpUser, constant, task

QUERY = f"first={os.environ.get('FIRST_MS', 50)}&ms={os.environ.get('GAP_MS', 20)}"
LIMIT = int(os.environ.get("STOP_AFTER_STREAMS", "0"))
read_whole = 0


class Chat(HttpUser):
    wait_time = constant(0)

    @task
    def chat(self):
        global read_whole
        body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True, "max_tokens": 8}
        r = self.client.post(f"/v1/chat/completions?{QUERY}", json=body, stream=True, name="chat")
        text = ""
        for line in r.iter_lines():
            if line.startswith(b"data: {"):
                text += "".join(c["delta"].get("content", "") for c in json.loads(line[6:])["choices"])
        assert text == "".join(f" tok{i}" for i in range(8)), text
        read_whole += 1
        if read_whole == LIMIT:
            self.environment.runner.quit()

"""An OpenAI-compatible API for OpenAIUser's tests: POST /v1/responses answers a Responses API object
whose usage says 7 output tokens, after N ms for the model `wait-N`; the model `fail` is refused (400,
the API's error object). GET /tally answers {"calls": {model: requests}, "keys": {API key: requests},
"peak": the most requests in progress at once since the last tally}: the ground truth of what the load
tool sent, and how many of its requests overlapped. A thread per request, so that requests overlap as a
real server's do.
POST /v1/chat/completions with "stream": true and the model `stream-N-M` streams N chunks of one token,
M ms apart (the first M ms after the head), then `data: [DONE]`, as the Chat Completions API streams
(an event each, chunked).

usage: python openai_server.py PORT   (prints "ready" once it listens)
"""

import collections
import json
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

lock = threading.Lock()
calls = collections.Counter()
keys = collections.Counter()  # the bearer tokens of the requests (Authorization), the API keys they sent
state = {"busy": 0, "peak": 0}


def response(model):
    return {
        "id": "resp_1",
        "object": "response",
        "created_at": 0,
        "status": "completed",
        "model": model,
        "output": [
            {
                "type": "message",
                "id": "msg_1",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "Hello!", "annotations": []}],
            }
        ],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": 3,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 7,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 10,
        },
    }


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def answer(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        with lock:
            tally = {"calls": dict(calls), "keys": dict(keys), "peak": state["peak"]}
            state["peak"] = state["busy"]
        self.answer(200, tally)

    def stream(self, n, ms):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()
        for i in range(n):
            time.sleep(ms / 1000)
            chunk = {
                "id": "chatcmpl-1",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": f"stream-{n}-{ms}",
                "choices": [{"index": 0, "delta": {"content": f"t{i} "}, "finish_reason": None}],
            }
            self.event(json.dumps(chunk))
        self.event("[DONE]")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def event(self, data):
        e = f"data: {data}\n\n".encode()
        self.wfile.write(b"%x\r\n%s\r\n" % (len(e), e))
        self.wfile.flush()

    def do_POST(self):
        model = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["model"]
        key = self.headers.get("Authorization", "").removeprefix("Bearer ")
        with lock:
            calls[model] += 1
            keys[key] += 1
            state["busy"] += 1
            state["peak"] = max(state["peak"], state["busy"])
        try:
            if model == "fail":
                error = {"message": "the server refuses", "type": "invalid_request_error", "code": None}
                return self.answer(400, {"error": error})
            if m := re.fullmatch(r"stream-(\d+)-(\d+)", model):
                return self.stream(int(m.group(1)), int(m.group(2)))
            if m := re.fullmatch(r"wait-(\d+)", model):
                time.sleep(int(m.group(1)) / 1000)
            self.answer(200, response(model))
        finally:
            with lock:
                state["busy"] -= 1


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024


if __name__ == "__main__":
    server = Server(("127.0.0.1", int(sys.argv[1])), Handler)
    print("ready", flush=True)
    server.serve_forever()

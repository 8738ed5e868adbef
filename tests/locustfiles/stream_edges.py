"""Streamed requests at their edges, for tests/test_sse_scripts.py: over HTTP/2 (run with --http2 against
nginx: the body comes whole, then is read as a streamed one), one that gets no response (refused):
still a streamed response, its body empty, and (with ODD_URL) redirects followed before the body is
streamed. One task, its findings appended to OUT, then the run ends."""

import json
import os

from locust import HttpUser, constant, task

done = False


class Edges(HttpUser):
    wait_time = constant(0)

    @task
    def edges(self):
        global done
        if done:
            return
        done = True
        with self.client.get("/", stream=True, name="streamed") as r:
            body = b"".join(r.iter_content(2))
        refused = self.client.get("http://127.0.0.1:1/", stream=True, name="refused")
        with refused:
            lines = list(refused.iter_lines())
        found = {"status": r.status_code, "body": body.decode(), "kind": type(refused).__name__}
        found.update(failed=refused.error is not None, lines=lines)
        self.client.stream = True  # requests' Session.stream: every call streams
        r = self.client.get("/", name="streamed")
        found.update(session=[type(r).__name__, r.text])
        self.client.stream = False
        odd = os.environ.get("ODD_URL")  # tests/servers/odd_server.py: redirects followed, then streamed
        if odd:
            with self.client.get(f"{odd}/login", stream=True, name="redirected") as r:
                found.update(redirected=[r.status_code, r.url[len(odd) :], r.content.decode()])
            looping = self.client.get(f"{odd}/loop", stream=True, name="loop")
            found.update(loop=looping.error)
        with open(os.environ["OUT"], "a") as f:
            f.write(json.dumps(found) + "\n")
        self.environment.runner.quit()

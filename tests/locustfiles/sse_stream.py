"""One user reading Server-Sent Events from tests/servers/sse_server.py as they arrive (requests'
`stream=True`), for tests/test_sse_scripts.py: Reader (HttpUser; MODE picks what each task does) or
FastReader (FastHttpUser). Each task appends one JSON line to OUT with what it saw (time.perf_counter()
readings, seconds); the run stops after TASKS tasks (0: at -t). Runs unchanged under Locust."""

import json
import os
import time

import requests
from locust import FastHttpUser, HttpUser, constant, events, task

MODE = os.environ.get("MODE", "times")
OUT = os.environ["OUT"]
TASKS = int(os.environ.get("TASKS", "0"))
done = 0


def write(record):
    with open(OUT, "a") as f:
        f.write(json.dumps(record) + "\n")


def quit_run(environment):
    if type(environment.runner).__module__.startswith("locust"):
        import gevent  # Locust's quit() kills every user greenlet, this one first: from its own

        gevent.spawn(environment.runner.quit)
    else:
        environment.runner.quit()


class Reader(HttpUser):
    wait_time = constant(0)

    def conns(self):
        return self.client.get("/__conns", name="conns").json()

    @task
    def read(self):
        global done
        if TASKS and done >= TASKS:
            return
        getattr(self, MODE)()
        done += 1
        if done == TASKS:
            quit_run(self.environment)

    def times(self):
        """Each data line's arrival, and when the call returned (its head)."""
        t0 = time.perf_counter()
        r = self.client.get("/sse?events=5&ms=50&first=40", stream=True, name="sse")
        head = time.perf_counter()
        lines = [(time.perf_counter(), line) for line in r.iter_lines() if line.startswith(b"data:")]
        write({"t0": t0, "head": head, "at": [t for t, _ in lines], "data": [line.decode() for _, line in lines]})

    def sseclient(self):
        """sseclient-py's SSEClient over the streamed response (it iterates the response)."""
        import sseclient

        t0 = time.perf_counter()
        r = self.client.get("/sse?events=5&ms=50&first=40", stream=True, name="sse")
        events = [(time.perf_counter(), e.data) for e in sseclient.SSEClient(r).events()]
        write({"t0": t0, "at": [t for t, _ in events], "data": [f"data: {d}" for _, d in events]})

    def cut(self):
        """A stream the server closes after 2 events: what the iteration raises, and what came before."""
        got, error = [], None
        with self.client.get("/sse?events=5&ms=20&cut=2", stream=True, name="cut") as r:
            try:
                for line in r.iter_lines():
                    if line.startswith(b"data:"):
                        got.append(line.decode())
            except requests.exceptions.ChunkedEncodingError as e:
                error = type(e).__name__
        write({"data": got, "error": error})

    def stall(self):
        """A stream that sends 2 events 10 ms apart, then nothing: the read timeout (0.3 s) ends it."""
        r = self.client.get("/stall?events=2", stream=True, name="stall", timeout=(5, 0.3))
        last, error = None, None
        try:
            for line in r.iter_lines():
                if line.startswith(b"data:"):
                    last = time.perf_counter()
        except requests.exceptions.ConnectionError as e:
            error = type(e).__name__
        write({"last": last, "raised": time.perf_counter(), "error": error})
        r.close()

    def whole_stall(self):
        """The same stalled stream without stream=True: the call waits for the whole body, and its
        timeout (0.3 s, the whole request's) ends it."""
        t0 = time.perf_counter()
        r = self.client.get("/stall?events=2", name="whole_stall", timeout=0.3)
        write({"waited": time.perf_counter() - t0, "error": type(r.error).__name__ if r.error else None})

    def abandon(self):
        """Streams left mid-way (closed, or dropped), then whole ones: the connections open meanwhile."""
        seen = []
        r = self.client.get("/sse?events=1000&ms=20", stream=True, name="abandoned")
        next(line for line in r.iter_lines() if line.startswith(b"data:"))
        r.close()
        time.sleep(0.1)  # the server sees the connection closed at its next send, 20 ms later
        seen.append(self.conns())
        r = self.client.get("/sse?events=1000&ms=20", stream=True, name="dropped")
        next(line for line in r.iter_lines() if line.startswith(b"data:"))
        del r
        time.sleep(0.1)
        seen.append(self.conns())
        for _ in range(3):  # read to the end: the connection serves the next request
            r = self.client.get("/sse?events=2&ms=5", stream=True, name="whole")
            assert [x for x in r.iter_lines() if x.startswith(b"data:")] == [b"data: event 0", b"data: event 1"]
        seen.append(self.conns())
        with self.client.get("/sse?events=2&ms=5", stream=True, name="whole") as r:
            assert r.content.count(b"data:") == 2  # `content` reads the rest
        seen.append(self.conns())
        write({"conns": seen})

    def caught(self):
        """catch_response with stream=True: the block reads the stream, then judges the request."""
        with self.client.get("/sse?events=3&ms=20", stream=True, catch_response=True, name="caught") as r:
            data = [line for line in r.iter_lines() if line.startswith(b"data:")]
            if len(data) == 3:
                r.failure("read all 3")
        write({"data": len(data)})

    def unread(self):
        """A streamed call whose response nobody reads (a task of constant arguments: not run natively)."""
        self.client.get("/sse?events=2&ms=20", stream=True, name="unread")

    def endless(self):
        """An endless stream, read until the run's end stops the user."""
        write({"started": time.perf_counter()})
        for _ in self.client.get("/sse?events=1000000&ms=50", stream=True, name="endless").iter_lines():
            pass


class FastReader(FastHttpUser):
    """FastHttpUser's streaming: FastHttpSession.iter_lines, text lines as they arrive."""

    wait_time = constant(0)

    @task
    def read(self):
        global done
        if TASKS and done >= TASKS:
            return
        t0 = time.perf_counter()
        lines = [(time.perf_counter(), x) for x in self.client.iter_lines("/sse?events=5&ms=50&first=40", name="sse")]
        at = [t for t, x in lines if x.startswith("data:")]
        write({"t0": t0, "at": at, "data": [x for _, x in lines if x.startswith("data:")]})
        done += 1
        if done == TASKS:
            quit_run(self.environment)


@events.test_stop.add_listener
def _stopped(**_kw):
    if MODE == "endless":
        write({"stopped": time.perf_counter()})

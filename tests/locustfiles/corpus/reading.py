"""Reading a response as scripts do: `text` by its declared charset (bad bytes replaced; a text type
without one as ISO-8859-1, a quoted one unquoted, as requests reads them), its `encoding`, and `json()` of
bodies that only the standard library's reader reads as it does (integers past 64 bits, NaN and
Infinity, a lone surrogate), from both clients; each user posts what it read (the text, the JSON's
repr or the error's name) back to the server, where Locust's and squall's must be the same."""

from _bounded import count
from locust import FastHttpUser, HttpUser, TaskSet, constant, task

KINDS = ("latin1", "badutf8", "json", "bigint", "nan", "surrogate", "nocharset", "quoted")


def seen(response):
    try:
        parsed = repr(response.json())
    except ValueError as e:
        parsed = type(e).__name__
    return {"text": response.text, "json": parsed, "encoding": response.encoding}


class Read(TaskSet):
    @task
    def each(self):
        count(self)
        for kind in KINDS:
            r = self.client.get(f"/body/{kind}")
            self.client.post(f"/seen/{kind}", json=seen(r))
            with self.client.get(f"/body/{kind}", catch_response=True) as caught:
                read = seen(caught)
                caught.success()
            self.client.post(f"/seen/caught/{kind}", json=read)
        self.client.post("/seen/text", json=seen(self.client.get("/text")))


class Requests(HttpUser):
    wait_time = constant(0)
    tasks = [Read]


class Fast(FastHttpUser):
    wait_time = constant(0)
    tasks = [Read]

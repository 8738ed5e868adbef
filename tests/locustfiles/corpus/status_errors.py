"""What a script sees of a failed status, on each of Locust's clients: the response's `error`, what
`raise_for_status()` raises, what the request event is told and what a with-block that judges nothing
records (FastHttpUser: geventhttpclient's LocustBadStatusCode(code=500) throughout; HttpUser: no
`error`, requests' HTTPError). Each user posts what it saw back to the server, where Locust's and
squall's must be the same; the failures CSV says the rest."""

from _bounded import count
from greenlet import getcurrent
from locust import HttpUser, constant, events, task
from locust.contrib.fasthttp import FastHttpUser, LocustBadStatusCode

TOLD = {}  # what the request event told, per user (its greenlet: the event fires in it)


@events.request.add_listener
def told(name, exception, **_kw):
    TOLD.setdefault(getcurrent(), []).append(f"{name}: {exception!r}")


def seen(user, status):
    r = user.client.get(f"/status/{status}")
    try:
        r.raise_for_status()
        raised = None
    except Exception as e:  # (which class, and its words, are what is compared)
        raised = f"{type(e).__name__}: {e!r}"
    with user.client.get(f"/status/{status}", name="caught", catch_response=True) as caught:
        caught_error = repr(getattr(caught, "error", None))  # (Locust: no attribute when none)
    return {
        "error": repr(getattr(r, "error", None)),
        "bad_status_code": isinstance(getattr(r, "error", None), LocustBadStatusCode),
        "raised": raised,
        "caught_error": caught_error,
    }


def statuses(user):
    count(user)
    for status in (200, 404, 500):
        user.client.post(f"/seen/{status}", json=seen(user, status))
    user.client.post("/seen/told", json=TOLD.pop(getcurrent(), []))


class Requests(HttpUser):
    wait_time = constant(0)

    @task
    def statuses(self):
        statuses(self)


class Fast(FastHttpUser):
    wait_time = constant(0)

    @task
    def statuses(self):
        statuses(self)

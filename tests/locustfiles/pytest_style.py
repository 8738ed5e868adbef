"""A pytest-style locustfile (Locust 2.40, after its examples/test_pytest.py), which
tests/test_locust_differences.py runs as test_pytest_style.py: each test function is a User class;
`session` is an HttpSession and `fastsession` a FastHttpSession for the user, on -H. A test ends
quietly at raise_for_status() (the next call starts), a judged failure is a failure, an assertion ends
that user. Each user stops after CALLS calls, so both tools make the same requests."""

import os

from locust.clients import HttpSession
from locust.contrib.fasthttp import FastHttpSession
from locust.exception import StopUser

CALLS = int(os.environ.get("CALLS", "3"))
calls: dict[str, int] = {}


def called(name):
    calls[name] = calls.get(name, 0) + 1
    if calls[name] > CALLS:
        raise StopUser()
    return calls[name]


def test_stuff(session: HttpSession):
    called("stuff")
    session.get("/pt/one")
    resp = session.get("/status/404")
    resp.raise_for_status()  # ends this call: Locust ignores requests' exceptions here
    session.get("/pt/never")


def test_other(fastsession: FastHttpSession):
    n = called("other")
    with fastsession.get("/pt/fast", catch_response=True) as r:
        r.failure("judged")
    if fastsession.base_url:  # -H
        fastsession.get("/pt/base")
    assert n < CALLS, "the last call fails: that user ends"


def helper(session):
    """Not a test: neither tool runs it."""
    session.get("/pt/helper")

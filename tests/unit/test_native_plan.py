"""squall.user.native's reading of task bytecode: which tasks are requests only, and what they call."""

import random

from squall.user.native import KEYWORDS, task_calls

PATH = "/global"


def index(self):
    self.client.get("/")


def several(self):
    self.client.get("/items?page=2", name="items", headers={"X-Trace": "t1"})
    self.client.post("/cart", json={"id": 7, "qty": [1, 2], "tags": ("a", "b")}, data=None)
    self.client.request("PATCH", "/thing", timeout=2.5, allow_redirects=False)


def reads_the_response(self):
    r = self.client.get("/")
    r.json()


def judges_it(self):
    with self.client.get("/", catch_response=True) as r:
        r.success()


def uses_a_global(self):
    self.client.get(PATH)


def draws_a_number(self):
    self.client.get(f"/item/{random.randint(1, 9)}")


def loops(self):
    for _ in range(3):
        self.client.get("/")


def other_attribute(self):
    self.other.get("/")


def nothing(self):
    pass


def returns_it(self):
    return self.client.get("/")


def graphql(self):
    self.client.graphql("{ a }")


def test_a_task_of_client_calls_with_constants_reads_as_its_calls():
    assert task_calls(index) == [("get", ("/",), {})]
    assert task_calls(several) == [
        ("get", ("/items?page=2",), {"name": "items", "headers": {"X-Trace": "t1"}}),
        ("post", ("/cart",), {"json": {"id": 7, "qty": [1, 2], "tags": ("a", "b")}, "data": None}),
        ("request", ("PATCH", "/thing"), {"timeout": 2.5, "allow_redirects": False}),
    ]


def test_a_task_that_does_anything_else_is_not_a_plan():
    for t in (reads_the_response, judges_it, uses_a_global, draws_a_number, loops, other_attribute, nothing):
        assert task_calls(t) is None, t.__name__
    for t in (returns_it, graphql, lambda self: self.client.get("/"), print):
        assert task_calls(t) is None


def test_keywords_that_need_python_to_see_the_response_keep_a_task_in_python():
    # task_calls reads them; the plan refuses them (squall.user.native._prepared_call).
    assert task_calls(lambda_free_catch) == [("get", ("/",), {"catch_response": True})]
    assert not {"catch_response", "hooks", "auth", "files"} & KEYWORDS


def lambda_free_catch(self):
    self.client.get("/", catch_response=True)


def test_locusts_wait_times_say_what_they_are_for_the_engine():
    from squall.user.wait_time import between, constant, constant_pacing, constant_throughput, poisson

    assert between(0.1, 0.2).squall_wait == ("between", (0.1, 0.2))
    assert constant(3).squall_wait == ("constant", 3)
    assert constant_pacing(2).squall_wait == ("pacing", 2)
    assert constant_throughput(4).squall_wait == ("pacing", 0.25)
    assert poisson(5).squall_wait == ("poisson", 5)


def test_waits_longer_than_the_engines_timers_hold_keep_a_user_in_python():
    """A native plan waits at most _LONGEST_NATIVE_WAIT, the engine's LONGEST_WAIT_S, where its waits
    saturate (its Durations and Instants overflowed at 1e19 s, the run aborted, and 1e30 s waited none).
    Longer waits, infinite ones and NaN run in Python, whose hub sleeps them until the run ends."""
    from squall.user.native import _LONGEST_NATIVE_WAIT, _longest

    inf, nan = float("inf"), float("nan")
    for wait in ({"constant": 3}, {"between": (0.5, 2)}, {"between": (2, 0.5)}, {"pacing": 1e8}, {"poisson": 0.5}):
        assert _longest(wait) <= _LONGEST_NATIVE_WAIT, wait
    too_long = [{"constant": inf}, {"constant": 1e19}, {"between": (1, inf)}, {"between": (1, 1e30)}]
    too_long += [{"pacing": 1e30}, {"poisson": 1e-12}, {"constant": nan}, {"between": (nan, 1)}]
    for wait in too_long:
        assert not _longest(wait) <= _LONGEST_NATIVE_WAIT, wait

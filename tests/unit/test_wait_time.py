"""Wait times between tasks: bounds of between, constant, and constant_pacing/constant_throughput's
arithmetic on a stand-in clock."""

import pytest

from squall.user import wait_time
from squall.user.task import TaskSet
from squall.user.users import User
from squall.user.wait_time import between, constant, constant_pacing, constant_throughput


class Instance:
    """A User or TaskSet, as far as a wait time sees it."""


def test_between_stays_within_its_bounds_and_spreads():
    w = between(0.5, 2.5)
    waits = [w(Instance()) for _ in range(5000)]
    assert all(0.5 <= x <= 2.5 for x in waits)
    assert min(waits) < 0.6 and max(waits) > 2.4  # uniform over the range, not stuck at one end


def test_between_equal_bounds_is_constant():
    assert {between(1, 1)(Instance()) for _ in range(10)} == {1}


def test_constant():
    w = constant(3)
    assert [w(Instance()) for _ in range(3)] == [3, 3, 3]


class Clock:
    def __init__(self):
        self.now = 500.0

    def __call__(self):
        return self.now


@pytest.fixture
def clock(monkeypatch):
    c = Clock()
    monkeypatch.setattr(wait_time.time, "monotonic", c)
    return c


def test_constant_pacing_waits_out_the_rest_of_the_period(clock):
    w, user = constant_pacing(10), Instance()
    assert w(user) == 10  # the first wait: no task has run yet
    clock.now += 10 + 3  # the wait, then a task of 3 s
    assert w(user) == pytest.approx(7)
    clock.now += 7 + 9.5
    assert w(user) == pytest.approx(0.5)


def test_constant_pacing_does_not_wait_after_a_task_longer_than_the_period(clock):
    w, user = constant_pacing(2), Instance()
    w(user)
    clock.now += 2 + 5
    assert w(user) == 0
    clock.now += 0 + 1  # the period counts again from the start of the task that just ran
    assert w(user) == pytest.approx(1)


def test_constant_pacing_keeps_each_users_own_schedule(clock):
    w, a, b = constant_pacing(4), Instance(), Instance()
    assert w(a) == 4  # at 500: a's task starts at 504
    clock.now = 501
    assert w(b) == 4  # b's at 505
    clock.now = 505  # a's task took 1 s
    assert w(a) == pytest.approx(3)
    clock.now = 507  # b's took 2 s
    assert w(b) == pytest.approx(2)


def test_constant_throughput_is_pacing_at_one_over_the_rate(clock):
    w, user = constant_throughput(4), Instance()
    assert w(user) == pytest.approx(0.25)
    clock.now += 0.25 + 0.1
    assert w(user) == pytest.approx(0.15)


def test_a_wait_time_on_a_class_is_called_as_a_method():
    class U(User):
        abstract = True
        wait_time = constant(7)

    class T(TaskSet):
        wait_time = between(2, 2)

    u = U.__new__(U)  # no environment needed to read the wait time
    assert u.wait_time() == 7
    assert T.__new__(T).wait_time() == 2

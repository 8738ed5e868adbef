"""Spawning: each --processes worker's share of the users, and the Spawner's choice of User classes
(weights, fixed_count) and pace (spawn rate), driven with a stand-in hub and clock."""

import itertools

import pytest

from squall import processes
from squall.env import Environment
from squall.runtime import spawner
from squall.user.users import User


@pytest.mark.parametrize("total", [0, 1, 2, 7, 10, 99, 100, 101, 1000, 12345])
@pytest.mark.parametrize("count", [1, 2, 3, 4, 7, 16])
def test_shares_add_up_and_differ_by_one_at_most(total, count):
    shares = [processes.share(total, (i, count)) for i in range(count)]
    assert sum(shares) == total
    assert max(shares) - min(shares) <= 1
    assert shares == sorted(shares, reverse=True)  # the first workers take the remainder


def test_share_outside_workers_is_everything():
    assert processes.share(17, None) == 17


def test_worker_reads_its_place_from_the_environment(monkeypatch):
    monkeypatch.delenv("SQUALL_WORKER", raising=False)
    assert processes.worker() is None
    monkeypatch.setenv("SQUALL_WORKER", "2/5")
    assert processes.worker() == (2, 5)


class FakeHub:
    """What the Spawner and User use of the hub: spawn a greenlet (a user's: a number; the spawner's own,
    which makes the users, runs at once and is over), kill it."""

    def __init__(self):
        self.greenlets = itertools.count(1)
        self.killed = []
        self.slept = []

    def spawn(self, fn, *args):
        if getattr(fn, "__name__", "") == "_make":
            fn()
            return Done()
        return Started(next(self.greenlets))

    def kill(self, g):
        self.killed.append(g)

    def sleep(self, seconds):
        """The spawner's greenlet waits: the test's clock moves on by that much."""
        self.slept.append(round(seconds, 9))
        spawner.time.monotonic.now += seconds

    def close_user(self, user_id):
        pass


class Done:
    dead = True


class Started(int):
    """A user's greenlet: a number, which takes the attributes the spawner marks it with."""


class Clock:
    """time.monotonic for the spawner: moves on by `tick` seconds at each reading."""

    def __init__(self, tick=1.0):
        self.now = 1000.0
        self.tick = tick

    def __call__(self):
        self.now += self.tick
        return self.now


@pytest.fixture
def clock(monkeypatch):
    c = Clock()
    monkeypatch.setattr(spawner.time, "monotonic", c)
    return c


def user_class(name, weight=1, fixed_count=0):
    return type(name, (User,), {"weight": weight, "fixed_count": fixed_count})


def counts_of(s):
    return {c.__name__: n for c, n in s.counts.items()}


def spawn_one_by_one(s, total):
    """Raises the target one user at a time (at a rate high enough to start it at once); yields the
    counts after each user."""
    for n in range(1, total + 1):
        s.set_target(n, 1e9)
        s.step()
        assert len(s.spawned) == n
        yield counts_of(s)


def test_weights_are_kept_after_every_user(clock):
    classes = [user_class("A", 3), user_class("B", 1), user_class("C", 2)]
    s = spawner.Spawner(Environment(hub=FakeHub()), classes)
    for n, counts in enumerate(spawn_one_by_one(s, 60), 1):
        for c in classes:
            assert abs(counts[c.__name__] - c.weight / 6 * n) < 1, (n, counts)
    assert counts == {"A": 30, "B": 10, "C": 20}


def test_fixed_count_users_come_first_and_exactly(clock):
    classes = [user_class("Weighted", 1), user_class("Admin", fixed_count=2), user_class("Other", 3)]
    s = spawner.Spawner(Environment(hub=FakeHub()), classes)
    history = list(spawn_one_by_one(s, 10))
    assert [type(u).__name__ for u, _g in s.spawned[:2]] == ["Admin", "Admin"]
    assert history[-1] == {"Weighted": 2, "Admin": 2, "Other": 6}


def test_fixed_count_beyond_the_target_gets_only_the_target(clock):
    s = spawner.Spawner(Environment(hub=FakeHub()), [user_class("Plain"), user_class("Many", fixed_count=5)])
    s.set_target(3, 1e9)
    s.step()
    assert counts_of(s) == {"Plain": 0, "Many": 3}


def test_lowering_the_target_stops_the_last_users_started(clock):
    hub = FakeHub()
    env = Environment(hub=hub)
    classes = [user_class("A", 1), user_class("B", 1)]
    s = spawner.Spawner(env, classes)
    s.set_target(6, 1e9)
    s.step()
    greenlets = [g for _u, g in s.spawned]
    assert env.runner.user_count == 6
    s.set_target(2, 1e9)
    s.step()
    assert hub.killed == greenlets[:1:-1]  # the last four, newest first
    assert env.runner.user_count == 2 and sum(s.counts.values()) == 2


def test_new_classes_from_a_shape_join_the_choice(clock):
    a, b = user_class("A"), user_class("B")
    s = spawner.Spawner(Environment(hub=FakeHub()), [a])
    s.set_target(2, 1e9)
    s.step()
    s.set_target(4, 1e9, [b])
    s.step()
    assert counts_of(s) == {"A": 2, "B": 2}


def test_spawn_rate(clock):
    clock.tick = 0.0  # moved by hand here
    env = Environment(hub=FakeHub())
    s = spawner.Spawner(env, [user_class("A")])
    s.set_target(10, 2.0)  # two users a second
    s.step()
    assert len(s.spawned) == 1  # the first one at once, as in Locust
    clock.now += 0.25
    s.step()
    assert len(s.spawned) == 1
    clock.now += 0.25
    s.step()
    assert len(s.spawned) == 2
    clock.now += 1.0
    s.step()
    assert len(s.spawned) == 4
    clock.now += 60.0  # credit is capped at one second's worth: no burst after a stall
    s.step()
    assert len(s.spawned) == 6


def test_users_start_one_over_rate_apart_as_in_locust(clock):
    """The run loop steps every 0.1 s; at -r 200 each step lets 20 users through, and they start 5 ms
    apart (Locust sleeps 1/rate between two), not in one burst."""
    clock.tick = 0.0
    hub = FakeHub()
    s = spawner.Spawner(Environment(hub=hub), [user_class("A")])
    s.set_target(100, 200.0)
    s.step()
    assert len(s.spawned) == 1 and hub.slept == []  # the first at once
    clock.now += 0.1
    s.step()
    assert len(s.spawned) == 21
    assert hub.slept == [0.005] * 19  # 20 users over the next 0.1 s: the first at once, the rest 5 ms apart


def test_above_200_a_second_users_start_in_groups_of_those_due_within_5_ms(clock):
    """-r 1000: a wake-up every 5 ms starts the 5 users due by then (each at most 5 ms late), not one
    wake-up a user; the rate over the step is the same."""
    clock.tick = 0.0
    hub = FakeHub()
    s = spawner.Spawner(Environment(hub=hub), [user_class("A")])
    s.set_target(1000, 1000.0)
    s.step()
    assert len(s.spawned) == 1 and hub.slept == []
    clock.now += 0.1
    s.step()
    assert len(s.spawned) == 101  # 100 users over the next 0.1 s
    assert all(abs(t - 0.005) < 1e-9 for t in hub.slept) and len(hub.slept) == 20


def test_done_when_every_user_started_and_stopped(clock):
    env = Environment(hub=FakeHub())
    s = spawner.Spawner(env, [user_class("A")])
    assert not s.done()  # no target yet
    s.set_target(2, 1e9)
    s.step()
    assert not s.done()
    for u, _g in s.spawned:
        env.user_stopped(u)
    assert s.done()

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


def test_a_shapes_classes_are_the_choice_from_then_on(clock):
    """A tick's classes are the only ones new users come from; the users of others already running stay,
    until a lower target stops the newest."""
    a, b = user_class("A"), user_class("B")
    s = spawner.Spawner(Environment(hub=FakeHub()), [a])
    s.set_target(2, 1e9)
    s.step()
    s.set_target(4, 1e9, [b])
    s.step()
    assert counts_of(s) == {"A": 2, "B": 2}
    s.set_target(1, 1e9, [a, b])
    s.step()
    assert counts_of(s) == {"A": 1, "B": 0}


def test_the_weighted_draw_is_locusts():
    """As Locust's _kl_generator (locust/dispatch.py) draws: weights 5 and 1 give AABAAAAABAAA (its
    docstring says AAABAAAAABAA; its code gives this); equal weights alternate, by name first; nothing
    to draw from is None."""
    draw = spawner.weighted_draw([("A", 5.0), ("B", 1.0)])
    assert "".join(next(draw) for _ in range(12)) == "AABAAAAABAAA"
    draw = spawner.weighted_draw([("B", 1.0), ("A", 1.0)])
    assert [next(draw) for _ in range(4)] == ["A", "B", "A", "B"]
    assert next(spawner.weighted_draw([])) is None


def test_a_stage_naming_a_fixed_count_class_adds_what_locust_adds(clock):
    """tests/locustfiles/shape_classes.py's stages: 2 users of [A], then 3 of [B, C] with C's fixed_count
    1, then 1 of [A, B]. Locust's dispatcher looks for missing fixed_count users only at its start and
    after a user stopped, so the second stage adds a B, not a C; the third stops the newest (B, then an
    A). squall added a C (fixed_count first, always)."""
    a, b, c = user_class("A"), user_class("B"), user_class("C", fixed_count=1)
    env = Environment(hub=FakeHub())
    s = spawner.Spawner(env, [a, b, c])
    seen = []
    for users, classes in [(2, [a]), (3, [b, c]), (1, [a, b]), (3, [b, c])]:
        s.set_target(users, 1e9, classes)
        s.step()
        assert s.settled()
        seen.append(counts_of(s))
    # (the last: a user was stopped, so C's missing user comes first, then B's draw goes on)
    assert seen == [
        {"A": 2, "B": 0, "C": 0},
        {"A": 2, "B": 1, "C": 0},
        {"A": 1, "B": 0, "C": 0},
        {"A": 1, "B": 1, "C": 1},
    ]


def test_only_fixed_count_classes_all_there_settle_short_of_the_target(clock):
    """[C] with fixed_count 1 and a target of 3: one C, and the spawning is complete (Locust's dispatch
    ends when no class has a user to give)."""
    s = spawner.Spawner(Environment(hub=FakeHub()), [user_class("C", fixed_count=1)])
    s.set_target(3, 1e9)
    s.step()
    s.step()
    assert counts_of(s) == {"C": 1} and s.settled()


def test_lowering_the_target_settles_once_the_users_over_it_stopped(clock):
    clock.tick = 0.0
    s = spawner.Spawner(Environment(hub=FakeHub()), [user_class("A")])
    s.set_target(4, 1e9)
    clock.now += 1.0
    s.step()
    assert len(s.spawned) == 4 and s.settled()
    s.set_target(1, 1.0)  # one a second
    for _ in range(3):
        assert not s.settled()
        clock.now += 1.0
        s.step()
    assert len(s.spawned) == 1 and s.settled()


LOCUST_DISPATCH = """
import json, os, sys
os.environ["LOCUST_SKIP_MONKEY_PATCH"] = "1"
from locust import User
from locust import dispatch
from locust.dispatch import UsersDispatcher
from locust.runners import WorkerNode
dispatch.gevent.sleep = lambda seconds: None  # (its pause between iterations: a stage ending short waits 1 s)
results = []
for spec in json.loads(sys.stdin.read()):
    classes = {n: type(n, (User,), {"weight": w, "fixed_count": f}) for n, (w, f) in spec["classes"].items()}
    d = UsersDispatcher(worker_nodes=[WorkerNode("local")], user_classes=list(classes.values()))
    out = []
    for users, names in spec["steps"]:
        d.new_dispatch(users, 1e9, [classes[n] for n in names] if names else None)
        counts = {}
        for dispatched in d:
            counts = dispatched["local"]
        out.append({n: k for n, k in counts.items() if k})
    results.append(out)
print(json.dumps(results))
"""


def test_the_draw_is_locusts_dispatch_over_random_stages(clock):
    """Random User classes (weights, fixed counts) and stages (a target, the classes a shape's tick
    names, or all): after each stage the users of each class are what Locust 2.47's own UsersDispatcher
    gives (run in a process of its own: importing Locust patches the interpreter with gevent)."""
    import json
    import random
    import subprocess
    import sys

    from support import needs_locust

    needs_locust()
    rng = random.Random(7)
    specs = []
    for _ in range(200):
        names = ["A", "B", "C", "D"][: rng.randint(1, 4)]
        specs.append(
            {
                "classes": {n: [rng.randint(1, 5), rng.choice([0, 0, 1, 2])] for n in names},
                "steps": [
                    [rng.randint(0, 12), rng.sample(names, rng.randint(1, len(names))) if rng.random() < 0.5 else None]
                    for _ in range(6)
                ],
            }
        )
    locust = subprocess.run(
        [sys.executable, "-c", LOCUST_DISPATCH], input=json.dumps(specs), capture_output=True, text=True, check=True
    )
    for spec, theirs in zip(specs, json.loads(locust.stdout)):
        classes = {n: user_class(n, w, f) for n, (w, f) in spec["classes"].items()}
        s = spawner.Spawner(Environment(hub=FakeHub()), list(classes.values()))
        mine = []
        for users, chosen in spec["steps"]:
            s.set_target(users, 1e9, [classes[n] for n in chosen] if chosen else None)
            s.step()
            s.step()
            mine.append({n: k for n, k in counts_of(s).items() if k})
        assert mine == theirs, spec


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

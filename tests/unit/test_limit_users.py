"""`squall -f --find-limit`'s user steps (squall.commands.run_limit): the per-user rate they are judged
against, and the search over a simulated closed system of known capacity."""

import math
import random

import pytest

from squall import limit, thresholds
from squall.commands import run_limit

SLOS = thresholds.parse_all(limit.DEFAULT_SLOS)


def result(users, rate, capacity, rng, spread, seconds=5):
    """A step of `users` each making `rate` requests a second against a target that completes at most
    `capacity` a second: per-second counts around min(users x rate, capacity), with a standard deviation
    of `spread` x sqrt(count) (1: Poisson's; paced users spread less)."""
    mean = min(users * rate, capacity)
    series = [{"requests": max(0.0, rng.gauss(mean, spread * math.sqrt(mean)))} for _ in range(seconds)]
    total = sum(p["requests"] for p in series)
    aggregate = {"requests": total, "failures": 0, "mean_us": 2000.0, "max_us": 5000, "min_us": 100,
                 "percentiles_us": {"50": 1500, "95": 3000, "99": 4000}}  # fmt: skip
    return {"duration_s": float(seconds), "timeseries": series, "aggregate": aggregate, "endpoints": []}


def step(users, achieved, se):
    s = limit.Step(load=users, achieved=achieved, achieved_se=se, p50_us=1, p95_us=1, p99_us=1, error_rate=0.0)
    s.passed = True
    return s


def test_the_per_user_rate_is_the_precision_weighted_mean_of_the_probe_and_the_steps_before_a_failure():
    per_user = run_limit.PerUser(step(1, 10.4, 0.4), 1)  # 10.4 +- 0.4 a user
    assert per_user.estimate() == pytest.approx((10.4, 0.4))
    per_user.seen(step(10, 100.0, 1.0), 10)  # 10.0 +- 0.1 a user: 16 times the probe's weight
    rate, se = per_user.estimate()
    assert rate == pytest.approx((10.4 / 0.16 + 10.0 / 0.01) / (1 / 0.16 + 1 / 0.01))
    assert se == pytest.approx(1 / math.sqrt(1 / 0.16 + 1 / 0.01))
    failed = step(40, 300.0, 1.0)
    failed.passed = False
    per_user.seen(failed, 40)
    per_user.seen(step(30, 290.0, 1.0), 30)  # after a failure: near the limit, not a user's rate any more
    assert per_user.estimate() == (rate, se)


def search(seed, pooled, spread, rate=10.0, capacity=300.0):
    """The users search of a file whose users make `rate` requests a second, against `capacity`: the
    limit it reports, judging steps against the pooled per-user rate or the probe's alone."""
    rng = random.Random(seed)
    per_user = run_limit.PerUser(run_limit.judge(result(1, rate, capacity, rng, spread), 1, SLOS, None), 1)
    probe_alone = per_user.estimate()

    def measure(load):
        users = int(load)
        s = run_limit.judge(result(users, rate, capacity, rng, spread), users, SLOS,
                            per_user.estimate() if pooled else probe_alone)  # fmt: skip
        per_user.seen(s, users)
        return s

    return limit.find(measure, 10, whole=True).limit


def test_the_users_limit_is_judged_against_many_users_rate_not_one_users():
    """30 users' worth of capacity, 5 s steps, paced users' spread: with the probe's 1-user rate alone
    the search let 34 users and more pass in half the searches (its noise times N is slack); judged
    against the rate pooled from the steps that passed, never above 33 (the 3% the search keeps for
    users' own slowing, and the step's noise)."""
    probe_alone = [search(seed, False, 0.3) for seed in range(100)]
    pooled = [search(seed, True, 0.3) for seed in range(100)]
    assert sum(found is not None and found > 33 for found in probe_alone) > 30
    assert not any(found is not None and found > 33 for found in pooled)
    assert sorted(f for f in pooled if f is not None)[len(pooled) // 2] in (30, 31, 32)


def pooled_server(users, think=1.0, workers=2, service=0.05, seconds=5):
    """A step of `users` started together, each waiting `think` seconds after each answer (Locust's
    `constant(1)`), against `workers` sync workers taking `service` seconds a request, first come first
    served (gunicorn's): the per-second counts of the answers, simulated exactly. Capacity: workers /
    service a second (40); a user's rate while it has room, 1 / (think + service) (0.95)."""
    import heapq

    free = [0.0] * workers  # when each worker is next free
    sends = [(0.0, u) for u in range(users)]  # (when a user sends, who)
    heapq.heapify(sends)
    counts = [0] * seconds
    while sends:
        sent, user = heapq.heappop(sends)
        if sent >= seconds:
            break
        start = max(sent, heapq.heappop(free))
        done = start + service
        heapq.heappush(free, done)
        if done < seconds:
            counts[int(done)] += 1
        heapq.heappush(sends, (done + think, user))
    series = [{"requests": float(n)} for n in counts]
    aggregate = {"requests": float(sum(counts)), "failures": 0, "mean_us": 50_000.0, "max_us": 60_000,
                 "min_us": 50_000, "percentiles_us": {"50": 50_000, "95": 52_000, "99": 55_000}}  # fmt: skip
    return {"duration_s": float(seconds), "timeseries": series, "aggregate": aggregate, "endpoints": []}


def test_a_probe_that_counts_one_request_every_second_is_not_taken_as_exact():
    """One user a request every 1.05 s counts 1, 1, 1 in the probe's inner seconds: a rate of 1.00 with
    no spread, where its rate is 0.95. Taken as exact, it outweighed every step, and 15 users had to make
    15 requests a second: the search said 14 users against 2 workers of 50 ms (40 a second: 42 users at
    0.95). A count is known to one request over the seconds counted, at best."""
    probe = run_limit.judge(pooled_server(1), 1, SLOS, None)
    assert probe.achieved == 1.0 and probe.achieved_se == pytest.approx(1 / 4)  # (4 inner seconds)
    per_user = run_limit.PerUser(probe, 1)

    def measure(load):
        users = int(load)
        s = run_limit.judge(pooled_server(users), users, SLOS, per_user.estimate())
        per_user.seen(s, users)
        return s

    found = limit.find(measure, 10, whole=True).limit
    assert found is not None and 0.9 * 40 * 1.05 <= found <= 1.1 * 40 * 1.05, found

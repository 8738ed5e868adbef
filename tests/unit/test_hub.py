"""The hub's scheduling: a greenlet is resumed once for each wait, by what it waits for, never by a
resumption left over from a wait it was thrown out of."""

import time

from greenlet import GreenletExit, greenlet

from squall._engine import ScriptEngine
from squall.runtime.hub import Hub


def test_a_greenlet_killed_as_its_timer_falls_due_is_not_resumed_by_that_timer_later():
    """The kill is queued in the pass where the victim's timer falls due (by a greenlet that runs first
    in it, as the run's driver does with gevent): the timer's resumption is queued behind the kill. The
    victim, thrown out of its sleep, sleeps again (as an on_stop waits): that sleep must last its time,
    not end at once on the first sleep's resumption (with gevent, a switch into whatever it waits on)."""
    hub = Hub(ScriptEngine())
    log = []

    def victim():
        try:
            hub.sleep(0.005)
            log.append(("woke", 0.0))
        except GreenletExit:
            began = time.monotonic()
            hub.sleep(0.03)
            log.append(("slept again", time.monotonic() - began))

    v = hub.spawn(victim)

    def killer():
        # The victim's timer, set as it went to sleep just before in this pass: held here until it is due,
        # the kill is queued first and the timer's resumption at the pass's end, behind it. (Waiting by
        # sleep(0) passes instead failed 3 runs in 15: the timer could fall due and be queued at the end
        # of a pass before this greenlet saw it due, and then the victim woke first.)
        due = hub.timers.next_due()
        assert due is not None
        while time.monotonic() < due:
            pass
        hub.kill(v)

    hub.spawn(killer)
    hub.run_until(time.monotonic() + 0.2)
    assert log and log[0][0] == "slept again" and log[0][1] >= 0.03, log


def test_a_pass_runs_the_timers_due_with_the_greenlets_ready_so_that_one_poll_sends_for_both():
    """With think time, the users whose responses came (queued by the engine's poll) and those whose
    think time ended in the same millisecond run in one pass: the requests they make then go out in the
    next poll, one a millisecond (hub.py `_pass`), not in a poll of their own after a second pass."""
    hub = Hub(ScriptEngine())
    ran = []

    def thinker():
        hub.sleep(0.001)
        ran.append("think time over")

    hub.spawn(thinker)
    hub._pass()  # it starts, and sleeps
    answered = greenlet(lambda value: ran.append(value), parent=hub.main)
    hub.ready.append((answered, "response"))  # as `_dispatch` queues a user whose request completed
    time.sleep(0.003)  # the thinker's timer falls due
    hub._pass()
    assert ran == ["response", "think time over"]


def test_users_killed_in_their_sleep_end_without_searching_the_queue():
    """A test's end kills every user at once, most of them sleeping (think time): their timers have not
    fallen due, so nothing can have queued their resumption, and the queue, which holds every other
    kill, is not searched for one (it was, once a user: 10,000 users took 6 s to stop). All end, each
    once, and none is resumed by its timer afterwards."""
    searched = []

    class Counting(Hub):
        def unqueue(self, entry):
            searched.append(entry)
            super().unqueue(entry)

    hub = Counting(ScriptEngine())
    ended = []

    def sleeper(i):
        try:
            hub.sleep(5.0)
        except GreenletExit:
            ended.append(i)
            raise

    users = [hub.spawn(sleeper, i) for i in range(1000)]
    hub.run_until(time.monotonic() + 0.01)  # every one asleep
    for g in users:
        hub.kill(g)
    hub.run_until(time.monotonic() + 0.05)
    assert sorted(ended) == list(range(1000)) and all(g.dead for g in users)
    assert searched == []


def test_a_wait_of_infinite_or_huge_or_nan_seconds_never_ends_and_a_kill_still_ends_it():
    """`constant(float("inf"))` (Locust's user that only runs its on_start), a wait of 1e300 s, a NaN: the
    greenlet sleeps until it is killed, as gevent's sleep does; its timer no longer raises OverflowError
    (`int(inf)`), nor do the pauses between tasks or the timers of gevent's Timeout (`call_later`)."""
    hub = Hub(ScriptEngine())
    ended = []

    def sleeper(seconds, how):
        try:
            how(seconds)
            ended.append(("woke", seconds))
        except GreenletExit:
            ended.append(("killed", seconds))
            raise

    waits = [float("inf"), 1e300, float("nan")]
    sleepers = [hub.spawn(sleeper, s, hub.sleep) for s in waits]
    sleepers += [hub.spawn(sleeper, s, lambda s: hub.pause(s, hub.turns)) for s in waits]
    fired = []
    for s in waits:
        hub.call_later(s, lambda s=s: fired.append(s))
    t0 = time.monotonic()
    hub.run_until(t0 + 0.05)
    assert ended == [] and fired == []
    for g in sleepers:
        hub.kill(g)
    hub.run_until(time.monotonic() + 0.01)
    assert time.monotonic() - t0 < 1.0  # the hub woke at its deadlines, not at the timers'
    assert sorted(ended, key=str) == sorted((("killed", s) for s in waits * 2), key=str)
    assert all(g.dead for g in sleepers)

"""squall's gevent (squall.gevent_compat) on a real hub (an engine with no requests: the hub's own timers
and greenlets), driven from the test as a listener would drive it: from the main greenlet, whose waits
run the hub. Times are measured with the monotonic clock; each bound is a fraction of the sleeps
involved, far from both the parallel and the serial outcome, so a loaded machine only narrows the margin.
"""

import queue as stdlib_queue
import time

import pytest

import squall.gevent_compat as gevent
from squall import _engine
from squall.env import Environment
from squall.gevent_compat import _waiting, runs
from squall.gevent_compat.event import AsyncResult, Event
from squall.gevent_compat.exceptions import LoopExit
from squall.gevent_compat.lock import BoundedSemaphore, RLock, Semaphore
from squall.gevent_compat.pool import Group, Pool, PoolFull
from squall.gevent_compat.queue import Empty, Full, JoinableQueue, LifoQueue, PriorityQueue, Queue
from squall.runtime.hub import Hub
from squall.user.task import task
from squall.user.users import User


@pytest.fixture(autouse=True)
def hub():
    """A fresh hub (squall's gevent schedules on the latest made), and none of the last test's state."""
    runs._environment = None
    runs.user_greenlets.clear()
    _waiting.main_timers.clear()
    return Hub(_engine.ScriptEngine())


def timed(fn, *args):
    start = time.monotonic()
    result = fn(*args)
    return result, time.monotonic() - start


def nap(seconds, value=None):
    gevent.sleep(seconds)
    return value


# -- greenlets and groups


def test_a_pool_of_four_sleeps_takes_one_sleep_not_four():
    pool = Pool(4)
    greenlets = [pool.spawn(nap, 0.1, i) for i in range(4)]
    _, took = timed(pool.join)
    assert [g.value for g in greenlets] == [0, 1, 2, 3]
    assert 0.1 <= took < 0.3, took  # serial: 0.4 s
    assert len(pool) == 0 and pool.free_count() == 4


def test_a_pool_holds_at_most_its_size_and_spawn_waits_for_room():
    running, peak, spans = [0], [0], {}

    def work(i):
        running[0] += 1
        peak[0] = max(peak[0], running[0])
        start = time.monotonic()
        gevent.sleep(0.05)
        spans[i] = (start, time.monotonic())
        running[0] -= 1

    pool = Pool(2)
    _, took = timed(lambda: [pool.spawn(work, i) for i in range(4)] and pool.join())
    assert peak[0] == 2
    # Two waves of 0.05 s: the first two at once, each later one once one of them ended (ordered, not timed
    # against a bound a loaded host's scheduling would move: one parallel run took 0.174 s).
    first_end = min(spans[0][1], spans[1][1])
    assert abs(spans[0][0] - spans[1][0]) < 0.05 and spans[2][0] >= first_end and spans[3][0] >= first_end, spans
    assert 0.1 <= took < 1, took
    full = Pool(1)
    full.spawn(gevent.sleep, 0.05)
    assert full.full() and full.free_count() == 0
    with pytest.raises(PoolFull):
        full.add(gevent.Greenlet(gevent.sleep, 0), blocking=False)
    assert full.wait_available(timeout=1) == 1


def test_map_keeps_order_imap_unordered_yields_as_they_finish():
    pool = Pool(3)
    assert pool.map(lambda n: nap(0.01 * (3 - n), n * n), range(3)) == [0, 1, 4]
    assert list(pool.imap(lambda n: nap(0.01 * (3 - n), n), range(3))) == [0, 1, 2]
    assert list(pool.imap_unordered(lambda n: nap(0.02 * (3 - n), n), range(3))) == [2, 1, 0]
    assert pool.apply(lambda a, b: a + b, (2, 3)) == 5
    got = []
    g = Group().apply_async(lambda: 7, callback=got.append)
    g.join()
    gevent.sleep(0.01)  # the callback runs in a greenlet of its own
    assert g.value == 7 and got == [7]


def test_imap_raises_the_failure_where_the_reader_reaches_it():
    def f(n):
        if n == 1:
            raise ValueError("one")
        return n

    it = Group().imap(f, range(3))
    assert next(it) == 0
    with pytest.raises(ValueError, match="one"):
        next(it)


def test_greenlet_results_links_and_kill_before_start():
    g = gevent.spawn(nap, 0.01, "done")
    seen = []
    g.link(lambda source: seen.append(("link", source.value)))
    g.link_value(lambda source: seen.append("value"))
    g.link_exception(lambda source: seen.append("exception"))
    assert not g.ready() and bool(g)
    assert g.get(timeout=1) == "done" and g.successful() and g.dead
    gevent.sleep(0.01)
    assert sorted(map(str, seen)) == ["('link', 'done')", "value"]

    never_ran = []
    k = gevent.spawn(never_ran.append, 1)
    k.kill()
    gevent.sleep(0.01)
    assert k.dead and k.successful() and isinstance(k.value, gevent.GreenletExit) and never_ran == []

    slow = gevent.spawn(nap, 1)
    with pytest.raises(gevent.Timeout):
        slow.get(timeout=0.02)
    slow.kill(block=True)
    assert slow.dead and slow.successful()


def test_joinall_returns_what_finished_and_raises_on_request():
    # (a timeout 30 times the fast one's nap: on a loaded machine, xdist's neighbours running, a 10 ms
    # nap took more than 50 ms to come back)
    fast, slow = gevent.spawn(nap, 0.01), gevent.spawn(nap, 5)
    done, took = timed(gevent.joinall, [fast, slow], 0.3)
    assert done == [fast] and 0.3 <= took < 2
    gevent.killall([slow])
    assert slow.dead

    def fail():
        raise KeyError("x")

    bad = gevent.spawn(fail)
    with pytest.raises(KeyError):
        gevent.joinall([bad, gevent.spawn(nap, 0.01)], raise_error=True)
    assert isinstance(bad.exception, KeyError) and not bad.successful()


def test_sleep_zero_lets_the_others_run_first():
    order = []

    def step(name):
        for i in range(3):
            order.append((name, i))
            gevent.sleep(0)

    gevent.joinall([gevent.spawn(step, "a"), gevent.spawn(step, "b")])
    assert order == [("a", 0), ("b", 0), ("a", 1), ("b", 1), ("a", 2), ("b", 2)]


# -- events, locks, queues


def test_an_event_set_then_cleared_still_wakes_its_waiters():
    event = Event()
    woke = []
    waiters = [gevent.spawn(lambda: woke.append(event.wait(timeout=1))) for _ in range(3)]
    gevent.sleep(0.01)
    event.set()
    event.clear()
    gevent.joinall(waiters)
    assert woke == [True, True, True]
    assert Event().wait(timeout=0.02) is False
    result = AsyncResult()
    gevent.spawn_later(0.01, result.set, 42)
    assert result.get(timeout=1) == 42 and result.successful()
    failed = AsyncResult()
    failed.set_exception(ValueError("no"))
    with pytest.raises(ValueError):
        failed.get()
    with pytest.raises(gevent.Timeout):
        AsyncResult().get(timeout=0.01)


def test_a_semaphore_released_from_the_main_greenlet_wakes_the_waiters():
    """The issue's case: acquired before the users run, released by a listener (the main greenlet)."""
    gate = Semaphore()
    gate.acquire()
    passed = []
    users = [gevent.spawn(lambda i=i: (gate.wait(), passed.append(i))) for i in range(3)]
    gevent.sleep(0.02)
    assert passed == []
    gate.release()
    gevent.joinall(users, timeout=1)
    assert passed == [0, 1, 2]


def test_semaphore_acquire_release_and_timeouts():
    sem = Semaphore(2)
    holders = []
    # Each pair holds until its wave's end, one timer for both (two sleeps of 0.05 s could end in
    # different passes of the hub when their starts straddle a timer bucket, and the third holder
    # would then acquire between the two releases and see a counter of 0, not 1).
    waves = [Event(), Event()]
    start = time.monotonic()
    gevent.spawn_later(0.05, waves[0].set)
    gevent.spawn_later(0.1, waves[1].set)

    def hold():
        with sem:
            wave = len(holders) // 2
            holders.append(sem.counter)
            waves[wave].wait()

    greenlets = [gevent.spawn(hold) for _ in range(4)]
    gevent.joinall(greenlets)
    took = time.monotonic() - start
    # Two at a time: each pair took both permits (the counter at 0 once two hold), and the four took two
    # waves of 0.05 s at least (the upper bound only catches a hang: a loaded host moves the rest).
    assert holders == [1, 0, 1, 0], holders
    assert 0.1 <= took < 1, took
    assert sem.counter == 2
    sem.acquire()
    sem.acquire()
    assert sem.locked() and sem.acquire(blocking=False) is False
    assert gevent.spawn(sem.acquire, timeout=0.02).get() is False
    bounded = BoundedSemaphore(1)
    with pytest.raises(ValueError, match="too many"):
        bounded.release()


def test_the_main_greenlet_waits_by_running_the_hub_and_never_hangs():
    sem = Semaphore(0)
    gevent.spawn_later(0.03, sem.release)
    _, took = timed(sem.acquire)  # in the main greenlet: the hub runs until the greenlet releases it
    assert 0.03 <= took < 0.5
    with pytest.raises(LoopExit):
        Semaphore(0).acquire()  # nothing on the hub could ever release it
    assert Semaphore(0).acquire(timeout=0.01) is False


def test_rlock_is_reentrant_for_its_holder_only():
    lock = RLock()
    with lock, lock:
        assert lock.locked()
    assert not lock.locked()
    lock.acquire()
    with pytest.raises(RuntimeError, match="cannot release"):
        gevent.spawn(lock.release).get()


def test_queues_block_time_out_and_join():
    assert Empty is stdlib_queue.Empty and Full is stdlib_queue.Full
    q = Queue(maxsize=1)
    q.put("a")
    with pytest.raises(Full):
        q.put("b", timeout=0.01)
    gevent.spawn_later(0.02, q.get)
    q.put("c", timeout=1)  # room made by the greenlet's get
    assert q.get_nowait() == "c"
    with pytest.raises(Empty):
        q.get(timeout=0.01)
    jobs = JoinableQueue()
    done = []

    def worker():
        while True:
            item = jobs.get()
            gevent.sleep(0.01)
            done.append(item)
            jobs.task_done()

    w = gevent.spawn(worker)
    for i in range(3):
        jobs.put(i)
    assert jobs.join(timeout=1) is True and done == [0, 1, 2]
    w.kill()
    lifo, prio = LifoQueue(), PriorityQueue()
    for n in (2, 3, 1):
        lifo.put(n)
        prio.put(n)
    assert [lifo.get() for _ in range(3)] == [1, 3, 2]
    assert [prio.get() for _ in range(3)] == [1, 2, 3]


# -- timeouts


def test_a_timeout_interrupts_whatever_its_greenlet_waits_on():
    def under_timeout(wait):
        try:
            with gevent.Timeout(0.02):
                wait()
        except gevent.Timeout as t:
            return str(t)
        return "not interrupted"

    waits = [
        lambda: gevent.sleep(1),
        lambda: Semaphore(0).acquire(),
        lambda: Queue().get(),
        lambda: Event().wait(),
        lambda: gevent.spawn(nap, 1).join(),
    ]
    results = [gevent.spawn(under_timeout, w) for w in waits]
    gevent.joinall(results, timeout=1)
    assert [g.value for g in results] == ["0.02 seconds"] * len(waits)


def test_a_greenlet_thrown_out_of_a_sleep_is_not_woken_later_by_that_sleep():
    """The timer of a sleep cut short by a Timeout must not end the greenlet's next sleep early."""

    def sleeper():
        with gevent.Timeout(0.01, False):
            gevent.sleep(0.05)  # its timer would fire at 0.05 s
        start = time.monotonic()
        gevent.sleep(0.1)  # must last 0.1 s, not end at the first sleep's 0.05 s
        return time.monotonic() - start

    assert gevent.spawn(sleeper).get(timeout=1) >= 0.1


def test_a_cancelled_timeout_raises_nothing_even_if_due():
    def not_cancelled():
        t = gevent.Timeout(0.01)
        t.start()
        gevent.sleep(0.03)  # raises the timeout here
        return "not raised"

    def cancel_in_time():
        t = gevent.Timeout.start_new(0.05)
        gevent.sleep(0.01)
        t.cancel()
        gevent.sleep(0.08)
        return "no timeout"

    first = gevent.spawn(not_cancelled)
    first.join()
    assert isinstance(first.exception, gevent.Timeout)
    assert gevent.spawn(cancel_in_time).get(timeout=1) == "no timeout"
    assert gevent.with_timeout(0.01, gevent.sleep, 1, timeout_value="late") == "late"
    with pytest.raises(KeyError), gevent.Timeout(0.01, KeyError):
        gevent.sleep(1)  # the main greenlet's own timeout


# -- the run's side


class Spawner(User):
    """A user whose on_start spawns a background greenlet that never ends by itself."""

    def on_start(self):
        self.background = gevent.spawn(self.loop)
        self.failing = gevent.spawn(lambda: 1 / 0)

    def loop(self):
        try:
            while True:
                gevent.sleep(0.01)
        finally:
            self.ended = True

    @task
    def idle(self):
        gevent.sleep(0.01)


def test_users_greenlets_belong_to_them_end_with_them_and_report_their_exceptions(hub):
    env = Environment(hub=hub)
    runs.bind(env)
    user = Spawner(env)
    env.runner.users[user] = hub.spawn(user.run)
    gevent.sleep(0.05)
    assert user.background._owner is user and user.background in runs.user_greenlets
    assert [e["message"] for e in env.exceptions.values()] == ["division by zero"]
    runs.kill_user_greenlets()
    runs.finish_user_greenlets(hub, time.monotonic() + 1)
    assert user.background.dead and user.ended and not runs.user_greenlets
    main_spawned = gevent.spawn(nap, 0.01)
    assert main_spawned._owner is None and main_spawned not in runs.user_greenlets


def test_monkey_patching_is_accepted_and_patches_nothing():
    assert gevent.monkey.patch_all() is True
    assert gevent.monkey.patch_socket() is None
    assert gevent.monkey.is_module_patched("socket") is False
    assert gevent.monkey.get_original("time", "sleep") is time.sleep


# -- the hub's timers


def test_timers_fire_never_early_at_most_a_bucket_late_in_the_order_of_their_times():
    """Timers against known times (no clock involved): each is due at the end of its millisecond
    bucket, which is at or after its time and less than TIMER_SLACK after it; the timers of one bucket
    come out ordered by time, ties in the order they were set."""
    from squall.runtime.hub import TIMER_SLACK, Timers

    timers = Timers()
    times = [10.0004, 10.0001, 10.0001, 10.0031, 10.0009, 12.5]
    entries = [timers.add(t, None) for t in times]
    assert timers.next_due() is not None and 10.0001 <= timers.next_due() < 10.0001 + TIMER_SLACK
    assert timers.pop_due(10.0000) == []
    due = timers.pop_due(10.0020)
    assert due == [entries[1], entries[2], entries[0], entries[4]]  # bucket 10.001: by time, ties kept
    for t in (10.0031, 12.5):
        assert timers.pop_due(t) == []  # never early
        [entry] = timers.pop_due(t + TIMER_SLACK)  # at most a bucket late
        assert entry[0] == t
    assert not timers and timers.next_due() is None


def test_a_wait_of_zero_yields_unless_the_task_gave_way_itself(hub):
    """Hub.pause(0): two tasks that never wait take turns at every pause, as gevent.sleep(0) makes
    them in Locust; a task that waited (for its request; here a sleep) goes on without a round
    through the hub."""
    order = []

    def never_waits(name):
        seen = 0
        for _ in range(4):
            order.append(name)
            seen = hub.pause(0, seen)

    hub.spawn(never_waits, "a")
    hub.spawn(never_waits, "b")
    hub.run_until(None)
    # each runs twice before its first yield (its first pause has nothing to compare with), then in turn
    assert order == ["a", "a", "b", "b", "a", "b", "a", "b"]

    rounds = []

    def waits_then_pauses():
        seen = 0
        for _ in range(3):
            hub.sleep(0.001)  # the task's own wait: the others had their turn
            before = hub.turns
            seen = hub.pause(0, seen)
            rounds.append(hub.turns - before)

    hub.spawn(waits_then_pauses)
    hub.run_until(None)
    assert rounds == [0, 0, 0]

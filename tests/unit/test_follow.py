"""squall.runtime.follow: the one place each run loop (bench and MQTT, a locustfile, a distributed
run) obeys the page's commands, publishes the run so far once a second and stops on a failed
threshold. The publisher and the thresholds' watch are the real ones; the run is a record of what it
was told."""

import queue

from squall import thresholds
from squall.runtime.follow import Follower
from squall.web import live


class Run:
    """A run's controls, recorded."""

    def __init__(self):
        self.told = []

    def stop(self, why):
        self.told.append(("stop", why))

    def reset(self):
        self.told.append(("reset",))

    def set_users(self, users, spawn_rate):
        self.told.append(("users", users, spawn_rate))


class Page:
    """The dashboard's side the follower reads: the commands its page posted, in order."""

    def __init__(self, run, *commands):
        self.run = run
        self.commands = queue.Queue()
        self.answered = []  # what the run had been told when the page's answers were let go
        for c in commands:
            self.commands.put(c)

    def obeyed(self):
        self.answered.append(list(self.run.told))

    def take_commands(self):
        out = []
        while not self.commands.empty():
            out.append(self.commands.get_nowait())
        return out


def stream(p95_us):
    """An engine's live stream: one second of 100 requests at the given p95."""
    aggregate = {"method": "", "name": "Aggregated", "requests": 100, "failures": 0, "mean_us": p95_us / 2}
    aggregate["percentiles_us"] = {"50": p95_us / 2, "95": p95_us, "99": p95_us, "100": p95_us}
    reads = []

    def read(cursor):
        reads.append(cursor)
        return {"cursor": cursor + 1, "timeseries": [], "totals": {"aggregate": aggregate, "endpoints": []}}

    return read, reads


def test_the_page_commands_reach_the_run_in_the_order_they_came():
    run = Run()
    read, _ = stream(1000)
    page = Page(run, ("users", {"users": "40", "spawn_rate": 4}), ("reset", {}), ("stop", {}))
    Follower(run, live.Publisher(read), page).tick()
    assert run.told == [("users", 40, 4.0), ("reset",), ("stop", "page")]
    # The page's answers go once all three were done (what it reads next shows them).
    assert page.answered == [run.told]


def test_the_run_so_far_is_read_once_a_second_and_its_fields_only_then():
    run, asked = Run(), []
    read, reads = stream(1000)
    follower = Follower(run, live.Publisher(read))
    follower.begin()

    def fields():
        asked.append(1)
        return {"users": 3}

    first, second = follower.tick(fields), follower.tick(fields)
    assert first is not None and second is None  # the second pass comes well within the second
    assert reads == [0] and asked == [1]
    assert follower.end(users=3) is not None and reads == [0, 1]  # the last seconds, whenever the last tick was


def test_a_failed_threshold_stops_the_run_once():
    run = Run()
    read, _ = stream(p95_us=500_000)
    watch = thresholds.Watch([thresholds.parse("p95<300ms")], grace=0.0)
    follower = Follower(run, live.Publisher(read), None, watch)
    follower.begin()
    follower.tick()
    follower.publisher.last = 0.0  # the next second
    follower.tick()
    assert run.told == [("stop", "threshold")] and watch.failed

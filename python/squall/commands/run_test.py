"""One test of a locustfile's run, as its lifecycle drives it (`ScriptTest`, squall.runtime.lifecycle):
spawning, the shape's ticks, the open model, Locust's stats table every 2 s, its log lines and events at
the points Locust has them, the page's commands (`ScriptControls`), and the end: users finishing their
task up to --stop-timeout, then killed, their greenlets with them.

A task that holds the interpreter (Python code that never requests, waits or sleeps) cannot be
switched away from, so the run's own clock is a SIGALRM timer every 0.1 s (`Watchdog`): past the
end of the run (`-t`, or a stop signal, plus `--stop-timeout`) it ends such a task by raising
GreenletExit into it, as Locust's end of run kills its users, and a task held for HANG_LIMIT is
ended with UserHung at any time."""

from __future__ import annotations

import argparse
import sys
import time
from typing import TYPE_CHECKING, Any

from greenlet import GreenletExit, getcurrent

from squall import _engine, processes
from squall.distributed.feed import WorkerFeed
from squall.env import Environment
from squall.event import events
from squall.exception import UserHung
from squall.gevent_compat import runs as gevent_runs
from squall.log import main_logger, runners_logger, user_classes_count
from squall.report import locust_console, locust_errors
from squall.runners import WorkerRunner
from squall.runtime import gevent_hub, limits
from squall.runtime.follow import Follower
from squall.runtime.open_model import OpenPool
from squall.runtime.spawner import Spawner
from squall.user.inspectuser import get_ratio
from squall.web import live

if TYPE_CHECKING:
    from types import FrameType

    from squall import monitor
    from squall.monitor import GeneratorWatch
    from squall.runtime.follow import Why
    from squall.runtime.hub import Hub
    from squall.runtime.lifecycle import Lifecycle
    from squall.shape import LoadTestShape
    from squall.user.users import User
    from squall.web.server import Dashboard, LiveStore

    # (when, {(method, name): (requests, failures)}) at the last live table, for the recent rates.
    LiveCounts = tuple[float, dict[tuple[str, str], tuple[int, int]]]

STATS_INTERVAL = 2.0
# A task holding the hub this long without a request, wait or sleep stops every other user: it is ended.
HANG_LIMIT = 10.0
# The watchdog's period: the end of a run and a stop signal take effect within this (plus END_HOLD).
WATCH_EVERY = 0.1
# Past the end of the run, a task that has held the hub this long is ended: long enough that an on_stop
# doing ordinary work is never cut, short enough that a spinning task ends within 0.5 s of the end.
END_HOLD = 0.2
# While the run waits for its users to end (their task at --stop-timeout, their on_stop once killed), it
# looks this often whether they have: each stop waited a whole 0.1 s before, when the users had ended
# in the first pass. With `Hub.serve` leaving at once when unbound (another 0.1 s), a 2-user run went
# from 0.21 s between the end of its time and its exit to 0.02.
STOP_POLL_S = 0.01


class Watchdog:
    """The SIGALRM handler of a run (see the module's docstring). `end_by` is the monotonic time past
    which no task may keep the hub; None while the run goes on."""

    def __init__(self, hub: Hub) -> None:
        self.hub = hub
        self.end_by: float | None = None

    def end(self, at: float) -> None:
        self.end_by = at if self.end_by is None else min(self.end_by, at)

    def check(self) -> None:
        """Raises into the task running now if it must end (called from signal handlers)."""
        held = self.hub.running_for()
        if held <= 0 or getcurrent() in (self.hub.main, self.hub.driver):
            return
        if self.end_by is not None and time.monotonic() >= self.end_by and held >= END_HOLD:
            raise GreenletExit()  # the user ends as at the end of a run: its on_stop runs
        if held > HANG_LIMIT:
            raise UserHung(f"a task ran {held:.0f} s without yielding (no request, wait or sleep)")

    def __call__(self, _signum: int, _frame: FrameType | None) -> None:
        self.check()


class Interrupt:
    """A stop signal to a locustfile's run (squall.runtime.lifecycle.Stoppable): the runner quits, and a
    task still holding the hub --stop-timeout from now is ended (at once if that is now)."""

    def __init__(self, env: Environment, watchdog: Watchdog, stop_timeout: float) -> None:
        self.env = env
        self.watchdog = watchdog
        self.stop_timeout = stop_timeout

    def on_signal(self, signum: int, count: int) -> None:
        self.env.runner.end_test()
        self.watchdog.end(time.monotonic() + self.stop_timeout)
        self.watchdog.check()  # a task holding the hub ends now, not when it yields


class ScriptTest:
    """The test itself: spawning, shape ticks, periodic stats, the dashboard, the end (`run`)."""

    def __init__(
        self,
        env: Environment,
        hub: Hub,
        classes: list[type[User]],
        shape: LoadTestShape | None,
        users: int,
        spawn_rate: float,
        run_time: float | None,
        stop_timeout: float,
        args: argparse.Namespace,
        dashboard: Dashboard | None = None,
        partial: live.PartialFiles | None = None,
        generator: GeneratorWatch | None = None,
        target_monitor: monitor.Monitor | None = None,
        watchdog: Watchdog | None = None,
    ) -> None:
        self.env, self.hub, self.classes, self.shape = env, hub, classes, shape
        self.users, self.spawn_rate, self.run_time, self.stop_timeout = users, spawn_rate, run_time, stop_timeout
        self.args, self.watchdog = args, watchdog
        self.runner = env.runner
        gevent_runs.bind(env)  # squall's gevent: the run's exceptions and hub for the locustfile's greenlets
        self.spawner = Spawner(env, classes)
        self.log = RunLog(args, self.spawner, shape is not None)
        self.worker = processes.worker()
        self.share = self.worker[1] if self.worker else 1  # this process's part of a rate
        self.store = store = dashboard.store if dashboard else None
        publisher = self._publisher(partial, generator, target_monitor)
        self.controls = ScriptControls(env, self.spawner, self.log, shape is not None, store, self.worker)
        self.follower = Follower(self.controls, publisher, dashboard, args.watch)
        self.deadline: float | None = None
        self.shaped = True  # the shape's first tick gave users (False: it ended the test at once)
        self.last_tick: Any = None  # the shape's last tick of users, applied
        self.next_stats = self.next_tick = 0.0
        self.last_counts: LiveCounts = (0.0, {})
        self.reason = "completed"

    def _publisher(
        self,
        partial: live.PartialFiles | None,
        generator: GeneratorWatch | None,
        target_monitor: monitor.Monitor | None,
    ) -> live.Publisher:
        """The run so far, to the page, the partial files or a distributed worker's feed (with the
        histograms: its driver merges them exactly). Only the process that shows the run warns of many
        names: a worker's (--processes or distributed) is shown by the process that started it."""
        hub, store = self.hub, self.store
        warns = self.worker is None
        if isinstance(partial, WorkerFeed):
            return live.Publisher(
                lambda cursor: hub.engine.live(cursor, histograms=True),
                store,
                partial,
                generator,
                target_monitor,
                names_warning=warns,
            )
        if store is not None:  # the page shows the failures in Locust's words, as the files will
            fast = locust_errors.fast_http(self.classes)

            def read(cursor: int) -> dict[str, Any]:
                now: dict[str, Any] = hub.engine.live(cursor)
                locust_errors.annotate(now["totals"]["errors"], fast)
                return now

            return live.Publisher(read, store, partial, generator, target_monitor, names_warning=warns)
        return live.Publisher(hub.engine.live, store, partial, generator, target_monitor, names_warning=warns)

    def open_model(self, rate: float, duration: float | None = None) -> None:
        """From now on, task iterations arrive at `rate` a second (the open model), for `duration`."""
        env = self.env
        if env.open_pool is None:
            env.open_pool = OpenPool(env, self.spawner, self.users)
            self.hub.on_arrivals = env.open_pool.dispatch
            self.spawner.set_target(0, self.spawn_rate)
        self.hub.engine.set_rate(rate / self.share, self.args.arrival, duration)

    def shape_tick(self) -> bool:
        """The shape's next tick applied; False when it returns None (the test is over)."""
        assert self.shape is not None
        tick = self.shape.tick()
        if tick is None:
            return False
        if isinstance(tick, dict):  # {"rate": R}: the open model at R iterations a second
            self.open_model(float(tick["rate"]))
        elif tick != self.last_tick:  # a new stage: Locust's runner.start() with it
            self.last_tick = tick
            self.log.shape_tick(tick)
            rate = tick[1] / self.share
            users = processes.share(int(tick[0]), self.worker)
            self.spawner.set_target(users, rate, tick[2] if len(tick) > 2 else None)
            if self.runner.state == "running":  # its spawning, complete once the target is met (`step`)
                self.runner.state = "spawning"
        return True

    def fields(self) -> dict[str, Any]:
        """What the page shows beside the engine's stream, read once a second."""
        runner, env = self.runner, self.env
        out: dict[str, Any] = {
            "users": runner.user_count,
            "target_users": None if env.open_pool else self.spawner.target,
            "state": runner.state,
            "exceptions": [dict(x, nodes="local") for x in env.exceptions.values()],
        }
        if self.store is not None:  # Locust's "Current ratio": the tasks of the users running now
            counts = runner.user_classes_count
            classes = self.classes
            out["tasks"] = {"per_class": get_ratio(classes, counts, False), "total": get_ratio(classes, counts, True)}
        return out

    def progress(self) -> None:
        """No progress line: Locust's stats table every 2 s instead."""

    def run(self, life: Lifecycle) -> str:
        """The test from its start to its users' end; returns the stop reason."""
        self.begin()
        life.follow(self, self.follower, state="stopping")
        self.end()
        return self.reason

    def begin(self) -> None:
        args, env, runner, shape, log = self.args, self.env, self.runner, self.shape, self.log
        # As in Locust, -t does not end a shape's test (a shape that wants it reads it: use_common_options).
        log.starting(None if shape else self.run_time)
        if args.rate:
            self.open_model(args.rate, self.run_time)  # exactly rate x run time arrivals
            runner.target_user_count = self.users
        elif not shape:
            self.spawner.set_target(self.users, self.spawn_rate)
        start = self.follower.begin()  # the target's monitor and the page's clock from now
        env.started_at = start
        self.deadline = start + self.run_time if self.run_time and not shape else None
        # Locust ticks the shape first, then fires test_start: its listeners see the first tick's users.
        self.shaped = shape is None or self.shape_tick()
        if self.watchdog is not None and self.deadline is not None:
            self.watchdog.end(self.deadline + self.stop_timeout)  # a task still holding the hub then is ended
        # Locust's order: test_start sees the runner ready, spawning_complete sees it spawning (its own
        # listener, registered after the locustfile's, then marks it running and resets the stats).
        events.test_start.fire(environment=env)
        runner.state = "spawning"
        if not args.rate and not shape:
            log.ramping(self.users, self.spawn_rate)  # after test_start, as Locust's runner logs it
        self.next_stats = start + STATS_INTERVAL
        self.next_tick = start + 1.0
        self.last_counts = (start, {})

    def step(self) -> bool:
        """One pass of the test (the hub runs the users for up to 0.1 s); True once it has ended."""
        if self._over():
            self._stopping()
            return True
        args, env, runner, spawner = self.args, self.env, self.runner, self.spawner
        now = time.monotonic()
        if env.open_pool is None:
            spawner.step()
        if (env.open_pool or spawner.settled()) and runner.state == "spawning":
            if env.open_pool is None:
                self.log.spawned()
            events.spawning_complete.fire(user_count=runner.user_count)
            runner.state = "running"
            if args.reset_stats:
                runners_logger.info("Resetting stats\n")
                env.stats.reset_all()
        # (a --processes worker prints no table of its own share: the tables come at the end, merged)
        live_tables = not args.only_summary and (args.print_stats or args.headless) and processes.worker() is None
        if now >= self.next_stats and live_tables:
            self.next_stats = now + STATS_INTERVAL
            self.last_counts = _print_live(self.hub.engine, self.last_counts)
        self.hub.run_until(min(t for t in (now + 0.1, self.deadline) if t is not None))
        return False

    def _over(self) -> bool:
        """Whether the test ends now, its reason set: the runner quit (runner.quit() from the script, the
        page's Stop, or a signal), -t, every user gone, or the shape's end."""
        now = time.monotonic()
        self.hub.engine.set_users(self.runner.user_count)
        if isinstance(self.runner, WorkerRunner):
            self.runner.deliver()  # the master's messages
        if self.runner.quitting or self.runner.stop_asked:  # (a signal's reason is marked by the command, after)
            self.reason = "interrupted" if self.controls.stopped_by_hand else self.reason
            return True
        if self.deadline is not None and now >= self.deadline:
            self.reason = "duration"
            self.log.run_time_reached()
            return True
        if self.spawner.done() and not self.shape:
            self.log.all_users_stopped(len(self.spawner.spawned), self.env.users_failed)
            return True  # every user stopped by itself: nothing is left to run
        if self.shape and (not self.shaped or now >= self.next_tick):
            self.next_tick = now + 1.0
            if not self.shaped or not self.shape_tick():
                self.log.shape_done()
                return True
        return False

    def _stopping(self) -> None:
        """The test's end begins: no task may hold the hub past --stop-timeout, no user starts,
        test_stopping fires."""
        if self.watchdog is not None:  # from now on no task may hold the hub past --stop-timeout
            self.watchdog.end(time.monotonic() + self.stop_timeout)
        self.spawner.halt()  # no user starts after the end
        events.test_stopping.fire(environment=self.env)  # with the runner's state as it was, as in Locust
        self.runner.state = "cleanup"

    def end(self) -> None:
        """The users' end: the open model's iterations finish (up to a grace), users finish their task up
        to --stop-timeout, then are killed, with the greenlets they spawned; test_stop fires."""
        env, hub, runner, stop_timeout = self.env, self.hub, self.runner, self.stop_timeout
        if env.open_pool is not None and not (runner.quitting or runner.stop_asked):
            # No more arrivals; the iterations running, and those waiting for a user, may finish (up to a
            # grace); what still waits then was never started: dropped.
            hub.engine.set_rate(0.0, self.args.arrival)
            pool = env.open_pool
            hub.run_while(lambda: not pool.all_idle(), time.monotonic() + max(stop_timeout, 10.0), 0.05)
        if stop_timeout > 0:  # users finish the task they are in, up to --stop-timeout
            runner.stopping = True
            hub.end_plans()  # native users too: each at its next wait
            hub.run_while(lambda: bool(runner.users), time.monotonic() + stop_timeout, STOP_POLL_S)
        for g in list(runner.users.values()):
            hub.kill(g)
        gevent_runs.kill_user_greenlets()  # the greenlets users spawned (gevent.spawn, pools) end with them
        spawned = gevent_hub.kill_user_spawned() if gevent_hub.enabled() else []  # the same with real gevent
        grace_end = time.monotonic() + max(stop_timeout, 10.0)
        hub.run_while(lambda: bool(runner.users) or any(not g.dead for g in spawned), grace_end, STOP_POLL_S)
        gevent_runs.finish_user_greenlets(hub, grace_end)  # and those their on_stop spawned
        runner.state = "stopped"
        events.test_stop.fire(environment=env)


class ScriptControls:
    """The page's commands to a locustfile's run: Stop, as Ctrl-C stops a headless run; Reset, as
    Locust's web UI (the event, the stats, the exceptions); a new user count, this process's share of
    it, unless a shape or the open model (--rate) sets the users."""

    def __init__(
        self,
        env: Environment,
        spawner: Spawner,
        log: RunLog,
        shaped: bool,
        store: LiveStore | None,
        worker: tuple[int, int] | None,
    ) -> None:
        self.env = env
        self.spawner = spawner
        self.log = log
        self.shaped = shaped
        self.store = store
        self.worker = worker  # (index, count) among --processes' workers, as the test read it; None: alone
        self.stopped_by_hand = False  # the run's stop reason: interrupted

    def stop(self, why: Why) -> None:
        self.stopped_by_hand = self.stopped_by_hand or why == "page"
        self.env.runner.end_test()

    def reset(self) -> None:
        events.reset_stats.fire()
        self.env.stats.reset_all()
        self.env.exceptions.clear()

    def set_users(self, users: int, spawn_rate: float) -> None:
        if self.shaped or self.env.open_pool is not None:
            return
        share = self.worker[1] if self.worker else 1
        mine = processes.share(users, self.worker)
        limits.ensure_open_files(max(mine, 1))  # checked against the limit by the server
        self.log.ramping(mine, spawn_rate / share)
        self.spawner.set_target(mine, spawn_rate / share)
        if self.store is not None:
            self.store.set(spawn_rate=spawn_rate)
        self.env.runner.state = "spawning"


class RunLog:
    """Locust's log lines of a run's life (`locust.main`'s and `locust.runners`'), at the points of the
    run where Locust logs them, with its texts."""

    def __init__(self, args: argparse.Namespace, spawner: Spawner, shaped: bool) -> None:
        self.args = args
        self.spawner = spawner
        self.shaped = shaped

    @property
    def dashboard_run(self) -> bool:
        return not self.args.headless and bool(self.args.autostart)

    def starting(self, run_time: float | None) -> None:
        if self.shaped:
            runners_logger.info("Shape test starting.")
            runners_logger.info("Shape worker starting")
        if run_time:
            main_logger.info(f"Run time limit set to {whole(run_time)} seconds")
        elif not self.shaped:
            main_logger.info("No run time limit set, use CTRL+C to interrupt")

    def ramping(self, users: int, rate: float) -> None:
        runners_logger.info(f"Ramping to {users:d} users at a rate of {rate:.2f} per second")

    def spawned(self) -> None:
        counts = {c.__name__: n for c, n in self.spawner.counts.items()}
        runners_logger.info(f"All users spawned: {user_classes_count(counts)}")

    def shape_tick(self, tick: Any) -> None:
        runners_logger.info(f"Shape test updating to {int(tick[0]):d} users at {float(tick[1]):.2f} spawn rate")
        self.ramping(int(tick[0]), float(tick[1]))

    def shape_done(self) -> None:
        runners_logger.info("Shape test stopping")
        self._stopping("Shape test completed")

    def run_time_reached(self) -> None:
        self._stopping("--run-time limit reached")

    def all_users_stopped(self, users: int, failed: int) -> None:
        """Every user ended before -t (squall ends the test then; Locust would run on with none): said,
        with how many an exception ended, so that a run cut short by a failing on_start is not taken
        for a completed one."""
        if failed:
            main_logger.warning(f"All {users} users have stopped, {failed} of them ended by an exception (above)")
        else:
            main_logger.info(f"All {users} users have stopped by themselves")
        self._stopping("Nothing left to run")

    def _stopping(self, reason: str) -> None:
        main_logger.info(f"{reason}, stopping test" if self.dashboard_run else f"{reason}, shutting down")


def _print_live(engine: _engine.ScriptEngine, last: LiveCounts) -> LiveCounts:
    """The stats table with the recent rate (since the last table), as Locust prints every 2 s."""
    totals = engine.live(1 << 62)["totals"]  # the totals only: a cursor past every second
    rows = [*totals["endpoints"], totals["aggregate"]]
    now = time.monotonic()
    t0, before = last
    dt = max(now - t0, 1e-9)
    rates: dict[tuple[str, str], tuple[float, float]] = {}
    counts: dict[tuple[str, str], tuple[int, int]] = {}
    for r in rows:
        key = (r["method"], r["name"])
        counts[key] = (r["requests"], r["failures"])
        n0, f0 = before.get(key, (0, 0))
        if r["requests"] < n0:  # reset since the last table (--reset-stats): counted afresh
            n0, f0 = 0, 0
        rates[key] = ((r["requests"] - n0) / dt, (r["failures"] - f0) / dt)
    endpoints, aggregate = rows[:-1], rows[-1]
    sys.stderr.write(locust_console.stats_table(endpoints, aggregate, 0.0, rates) + "\n")
    sys.stderr.flush()
    return now, counts


def whole(seconds: float | None) -> int | float | None:
    """A duration as Locust's options hold it: whole seconds as an int."""
    return int(seconds) if seconds is not None and float(seconds).is_integer() else seconds

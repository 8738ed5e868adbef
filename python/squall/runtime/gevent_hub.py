"""Real gevent under squall's users: any library a locustfile calls waits cooperatively, as under Locust.

Locust monkey-patches the standard library with gevent when it is imported (`gevent.monkey.patch_all()`),
so sockets, `ssl`, `select`, DNS, `time.sleep` and `threading`, and every library built on them (xmlrpc,
requests, gRPC's gevent mode, database drivers, websocket clients), wait on gevent's hub while the other
users run. squall does the same while it runs a locustfile (`enable`, unless LOCUST_SKIP_MONKEY_PATCH
is set, as Locust reads it), with gevent's real package: `import gevent` in a locustfile is gevent's own.

One hub for both: gevent's hub greenlet of the users' thread is `SquallHub`, and while a run is on
(`bind`) its loop is squall's scheduler (`squall.runtime.hub.Hub.serve`): the greenlet every waiting greenlet
switches to, squall's users (their requests and timers) and gevent's (its sockets, timers, locks,
events) alike, and the only one that resumes them, each from its own queue. Each pass runs the users
ready, then gevent's loop without blocking when it has watchers, then waits in the engine (its epoll,
its timer). While gevent has watchers, that wait lasts at most `squall.runtime.hub.TIMER_SLACK` (1 ms), so a
socket a library waits on is noticed within a millisecond of its readiness, as a gevent timer is: the
engine cannot see gevent's epoll. A run whose users never call a patched library has no gevent watcher
and waits as before. The run's driver (the main greenlet: its loop, the locustfile's listeners) is one
more greenlet on that hub: `Hub.run_until` suspends it on a squall timer, and a listener blocked in a
patched call waits on gevent's like any greenlet, so nothing ever switches into a greenlet that waits
elsewhere. Before a run and after it, the hub is gevent's ordinary one.

squall's own threads (the dashboard's server, the monitor) are real threads whatever the patching
(`NativeThread`): the dashboard's costs stay off the users' thread.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Callable

from squall.exception import user_traceback
from squall.runtime import gevent_plugins

if TYPE_CHECKING:
    from squall.env import Environment
    from squall.runtime.hub import Hub

_enabled = False


def enable() -> bool:
    """Patches the standard library with gevent, as `import locust` does, unless LOCUST_SKIP_MONKEY_PATCH
    is set or gevent is not installed; True when real gevent is on. Idempotent."""
    global _enabled
    if _enabled:
        return True
    if os.getenv("LOCUST_SKIP_MONKEY_PATCH"):
        return False
    try:
        import gevent.hub
        from gevent import monkey, queue
    except ImportError:
        return False
    gevent.hub.set_default_hub_class(_hub_class())
    with _plugins_found_once():
        monkey.patch_all()
    if not os.getenv("LOCUST_SKIP_URLLIB3_PATCH"):
        # Locust's: urllib3's pools wait cooperatively (locustio/locust#2812). Locust imports urllib3 to
        # patch it; squall patches it when something imports it (a run that never does is spared its
        # import: 0.04 CPU-s, a tenth of the start-up).
        _when_imported("urllib3.connectionpool", lambda m: setattr(m.ConnectionPool, "QueueCls", queue.LifoQueue))
    _enabled = True
    return True


def _when_imported(name: str, patch: Callable[[Any], None]) -> None:
    """Calls `patch` with module `name` now if it is imported, else right after its first import."""
    import sys

    if name in sys.modules:
        patch(sys.modules[name])
        return

    class Finder:
        """Finds nothing itself: wraps the loader of `name` so that `patch` runs once it has loaded."""

        @staticmethod
        def find_spec(fullname: str, path: Any = None, target: Any = None) -> Any:
            if fullname != name:
                return None
            sys.meta_path.remove(Finder)
            import importlib.util

            spec = importlib.util.find_spec(fullname)
            if spec is None or spec.loader is None:
                return spec
            execute = spec.loader.exec_module

            def exec_module(module: Any) -> None:
                execute(module)
                patch(module)

            spec.loader.exec_module = exec_module  # type: ignore[method-assign]  # this spec's loader only
            return spec

    sys.meta_path.insert(0, Finder)


@contextmanager
def _plugins_found_once() -> Iterator[None]:
    """While gevent patches, its plugins (called before and after each of the 25 modules it patches) come
    from one reading of the installed distributions (`gevent_plugins.found`), not one each time: each
    reading through importlib.metadata went over every distribution's metadata, 0.46 of patch_all's
    0.62 CPU-s with this project's 113 (cProfile). They are called as gevent calls them."""
    from gevent import events

    if not hasattr(events, "notify_and_call_entry_points"):
        yield  # a gevent that finds its plugins some other way: as it does
        return
    plugins = gevent_plugins.found()
    real = events.notify_and_call_entry_points

    def notify_and_call_entry_points(event: Any) -> None:
        events.notify(event)
        for plugin in plugins(event.ENTRY_POINT_NAME):
            plugin.load()(event)

    events.notify_and_call_entry_points = notify_and_call_entry_points
    try:
        yield
    finally:
        events.notify_and_call_entry_points = real


def enabled() -> bool:
    return _enabled


def sleep(seconds: float) -> None:
    """gevent's sleep (outside squall's run, or in another thread: on that thread's gevent hub)."""
    import gevent

    gevent.sleep(seconds)


def bind(hub: Hub, env: Environment) -> Any:
    """The run's scheduler becomes gevent's hub loop of this thread; returns that hub greenlet. A greenlet
    a user spawned that fails is counted in `env`'s exceptions, as a task's (`user_spawned`)."""
    import gevent

    gevent_hub = gevent.get_hub()
    gevent_hub.squall = hub
    gevent_hub.env = env
    return gevent_hub


def user_spawned(g: Any) -> bool:
    """Whether greenlet `g` was spawned by a user, or by a greenlet a user spawned (gevent keeps who
    spawned each of its Greenlets: `spawning_greenlet`, a weak reference); users' greenlets carry
    `squall_user` (squall.runtime.spawner)."""
    seen = 0
    while g is not None and seen < 1000:
        if getattr(g, "squall_user", False):
            return True
        parent = getattr(g, "spawning_greenlet", None)
        g = parent() if parent is not None else None
        seen += 1
    return False


def kill_user_spawned() -> list[Any]:
    """The end of the run: the live gevent Greenlets that users spawned are killed (their `finally` runs
    on the hub's next passes), as squall's own gevent did: a background loop never holds a run, nor
    requests after it. Returns them, to wait for. Greenlets spawned by listeners are left alone, as in
    Locust, and so are a library's threads (a patched `threading.Thread` is a greenlet: a Socket.IO
    client's read and write loops), which end when the library closes, as under Locust (killed, each
    printed threading's "Exception in thread" traceback). (One pass over the garbage collector's objects:
    a few ms, once.)"""
    import gc
    import threading

    import gevent

    def library_thread(g: Any) -> bool:
        return isinstance(getattr(getattr(g, "_run", None), "__self__", None), threading.Thread)

    spawned = [
        o
        for o in gc.get_objects()
        if isinstance(o, gevent.Greenlet) and not o.dead and user_spawned(o) and not library_thread(o)
    ]
    for g in spawned:
        g.kill(block=False)
    return spawned


def unbind(hub: Hub) -> None:
    """After the run (its users ended): gevent's hub is its ordinary one again, and squall's hub runs in
    the caller, as without gevent."""
    gevent_hub = hub.gevent
    if gevent_hub is None:
        return
    gevent_hub.squall = None  # its loop leaves squall's after the pass it is in ...
    if gevent_hub.serving:  # (it never started if no test did: a run stopped before the page's Start)
        gevent_hub.switch()  # ... which it finishes now, then it switches back here
    hub.leave_gevent()


class NativeThread:
    """A real thread whatever gevent patched (`threading.Thread` then makes greenlets, and its own join
    waits on gevent's locks): squall's dashboard server and monitor keep their costs off the users' thread.
    Inside it, the patched modules wait on that thread's own gevent hub, as in any thread under gevent."""

    def __init__(self, target: Callable[[], None], name: str) -> None:
        self.target = target
        self.name = name
        self._done = _original("_thread", "allocate_lock")()
        self._done.acquire()
        self._started = False

    def start(self) -> None:
        self._started = True

        def run() -> None:
            _name_native(self.name)
            try:
                self.target()
            finally:
                self._done.release()

        _original("_thread", "start_new_thread")(run, ())

    def join(self, timeout: float | None = None) -> None:
        if self._started and self._done.acquire(True, -1 if timeout is None else timeout):
            self._done.release()

    def is_alive(self) -> bool:
        return bool(self._done.locked())


def _original(module: str, name: str) -> Any:
    """The standard library's own `module.name`, as it was before gevent patched it."""
    if _enabled:
        from gevent.monkey import get_original

        return get_original(module, name)
    return getattr(__import__(module), name)


def _name_native(name: str) -> None:
    """The thread's name as the kernel shows it (the monitor's per-thread CPU reads it)."""
    import _thread

    try:
        with open(f"/proc/self/task/{_thread.get_native_id()}/comm", "w") as f:
            f.write(name[:15])
    except OSError:
        pass


def _hub_class() -> type:
    import gevent.hub
    from gevent.exceptions import LoopExit

    class SquallHub(gevent.hub.Hub):
        """gevent's hub, whose loop is squall's scheduler while a run is bound to it (module doc)."""

        squall: Hub | None = None
        env: Environment | None = None
        serving = False  # its loop is squall's now

        def handle_error(self, context: Any, type: Any, value: Any, tb: Any) -> None:
            """gevent prints a greenlet's failure; a failure of a greenlet a user spawned is also counted
            in the run's exceptions, as a task's (so the exit code is Locust's for task exceptions)."""
            super().handle_error(context, type, value, tb)
            env = self.env
            if env is not None and self.squall is not None and isinstance(value, Exception) and user_spawned(context):
                env.report_exception(None, value, user_traceback(value))

        def run(self) -> None:
            loop = self.loop
            while True:
                if self.squall is not None:
                    self.serving = True
                    try:
                        self.squall.serve(self)  # returns once unbound
                    finally:
                        self.serving = False
                    self.parent.switch()  # to the run's driver, which unbound it (`unbind`)
                    continue
                # gevent's own loop, one iteration at a time so that a run can bind between two
                if not loop.activecnt:
                    self.parent.throw(LoopExit("This operation would block forever", self, []))
                    continue
                loop.error_handler = self
                try:
                    loop.run(once=True)
                finally:
                    loop.error_handler = None

    return SquallHub

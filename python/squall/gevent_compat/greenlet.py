"""`gevent.greenlet`: `Greenlet`, `joinall`, `killall`, and the waiting on several objects (`wait`,
`iwait`) they rest on, with gevent's signatures and semantics, on squall's hub.

A `Greenlet` is a greenlet whose parent is the hub's main greenlet: `start()` queues it on the hub, and
it runs there among the users. Its result or exception is kept (`value`, `exception`, `get()`), and its
links are called on a later pass of the hub, as gevent calls them from its loop. An exception that ends
one is reported (see `runs`); `GreenletExit` is a successful end, as in gevent. Killing a greenlet that
has not started yet means it never runs (its links still fire), as in gevent."""

from __future__ import annotations

import sys
import time
import weakref
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Callable, Protocol

from greenlet import GreenletExit, getcurrent, greenlet

from squall.gevent_compat import runs
from squall.gevent_compat._waiting import Waiter, hub_is_idle, in_main, run_main_until, schedule
from squall.gevent_compat.timeout import Timeout
from squall.runtime.hub import current_hub

if TYPE_CHECKING:
    from types import TracebackType

__all__ = ["Greenlet", "joinall", "killall"]

ExcInfo = tuple[type[BaseException], BaseException, "TracebackType | None"]


class Linkable(Protocol):
    """What can be waited on with `wait`/`iwait`/`joinall`: gevent's rawlink protocol."""

    def rawlink(self, callback: Callable[[Any], None]) -> None: ...

    def unlink(self, callback: Callable[[Any], None]) -> None: ...


def _root() -> greenlet:
    """The thread's main greenlet (the parent of greenlets made before the run's hub)."""
    g = getcurrent()
    while g.parent is not None:
        g = g.parent
    return g


def _exception_instance(exception: Any) -> BaseException:
    """What `kill(exception)` raises: gevent takes a class, an instance or an exc_info triple."""
    if isinstance(exception, tuple) and len(exception) == 3:
        exception = exception[1]
    if isinstance(exception, type):
        exception = exception()
    return exception if isinstance(exception, BaseException) else GreenletExit()


class SpawnedLink:
    """A `link` callback: called in a greenlet of its own, as gevent does."""

    __slots__ = ("callback",)

    def __init__(self, callback: Callable[[Any], Any]) -> None:
        if not callable(callback):
            raise TypeError(f"Expected callable: {callback!r}")
        self.callback = callback

    def __call__(self, source: Greenlet) -> None:
        spawn_raw(self.callback, source)

    def __hash__(self) -> int:
        return hash(self.callback)

    def __eq__(self, other: object) -> bool:
        return self.callback == getattr(other, "callback", other)

    def __repr__(self) -> str:
        return repr(self.callback)


class SuccessSpawnedLink(SpawnedLink):
    __slots__ = ()

    def __call__(self, source: Greenlet) -> None:
        if source.successful():
            super().__call__(source)


class FailureSpawnedLink(SpawnedLink):
    __slots__ = ()

    def __call__(self, source: Greenlet) -> None:
        if not source.successful():
            super().__call__(source)


class Greenlet(greenlet):
    """gevent's `Greenlet`: `Greenlet(run, *args, **kwargs)`, or a subclass's `_run`."""

    _imap_task_index = -1  # its item's place, in an imap

    def __init__(self, run: Callable[..., Any] | None = None, *args: Any, **kwargs: Any) -> None:
        hub = current_hub()
        greenlet.__init__(self, None, hub.main if hub is not None else _root())
        if run is not None:
            self._run = run  # type: ignore[method-assign]  # (gevent's way: the instance's own _run)
        if not callable(self._run):
            raise TypeError("The run argument or self._run must be callable")
        self.args = args
        self.kwargs = kwargs
        self.value: Any = None
        self._exc_info: ExcInfo | None = None
        self._links: list[Callable[[Any], None]] = []
        self._notifying = False
        self._state = "new"  # then "scheduled", "running", "finished"; or "cancelled": killed before it ran
        self._timer: list[Any] | None = None
        self._formatted_info: str | None = None
        self._owner = runs.owner_of_current()
        self.spawning_greenlet = weakref.ref(getcurrent())

    # -- what it runs, and its result

    def _run(self, *args: Any, **kwargs: Any) -> Any:
        """Subclasses may override this (gevent's hook) instead of passing `run`."""
        return None

    def run(self, *_first_switch: Any) -> None:
        if self._state == "cancelled":
            return  # killed before it ran (the hub skips it: this is for a switch from elsewhere)
        self._state = "running"
        try:
            result = self._run(*self.args, **self.kwargs)
        except GreenletExit as e:
            self._finish(e, None)
        except BaseException as e:  # gevent's hub reports any exception, BaseExceptions included
            runs.report_failure(self, e, self._owner)
            self._finish(None, (type(e), e, e.__traceback__))
            if isinstance(e, (SystemExit, KeyboardInterrupt)):
                raise  # as gevent hands them to the main greenlet: the run ends
        else:
            self._finish(result, None)

    def _finish(self, value: Any, exc_info: ExcInfo | None) -> None:
        self._formatinfo()  # while _run and the arguments are still there
        if self._state != "cancelled":
            self._state = "finished"
        runs.user_greenlets.discard(self)
        if exc_info is None:
            self.value = value
            self._exc_info = (None, None, None)  # type: ignore[assignment]  # gevent's mark of success
        else:
            self._exc_info = exc_info
        self.__dict__.pop("_run", None)
        self.args, self.kwargs = (), {}
        self._schedule_links()

    @property
    def dead(self) -> bool:
        """Ended, or killed before it ever ran (so the hub never switches to it)."""
        return self._state == "cancelled" or bool(greenlet.dead.__get__(self))

    @property
    def started(self) -> bool:
        return bool(self)

    def __bool__(self) -> bool:
        return self._state in ("scheduled", "running")

    def ready(self) -> bool:
        return self.dead or self._exc_info is not None

    def successful(self) -> bool:
        return self._exc_info is not None and self._exc_info[1] is None

    @property
    def exception(self) -> BaseException | None:
        return self._exc_info[1] if self._exc_info is not None else None

    @property
    def exc_info(self) -> ExcInfo | None:
        info = self._exc_info
        return info if info is not None and info[0] is not None else None

    def _raise_exception(self) -> None:
        assert self._exc_info is not None and self._exc_info[1] is not None
        raise self._exc_info[1].with_traceback(self._exc_info[2])

    @property
    def name(self) -> str:
        return self.__dict__.get("_name") or f"Greenlet-{id(self) % 10_000}"

    @name.setter
    def name(self, value: str) -> None:
        self.__dict__["_name"] = value

    @property
    def minimal_ident(self) -> int:
        return id(self)

    def _formatinfo(self) -> str:
        if self._formatted_info is not None:
            return self._formatted_info
        func = self.__dict__.get("_run", self._run)
        owner = getattr(func, "__self__", None)
        if owner is self:
            name = "_run"
        elif owner is not None:
            name = repr(func)
        else:
            name = getattr(func, "__name__", "") or repr(func)
        shown = [repr(a)[:50] for a in self.args]
        shown += [f"{k}={repr(v)[:50]}" for k, v in self.kwargs.items()]
        self._formatted_info = name + (f"({', '.join(shown)})" if shown else "")
        return self._formatted_info

    def __repr__(self) -> str:
        named = f' "{self.name}" ' if "_name" in self.__dict__ else " "
        info = self._formatinfo()
        return f"<{type(self).__name__}{named}at {hex(id(self))}{': ' + info if info else ''}>"

    # -- starting

    def start(self) -> None:
        """Schedules it to run on the hub's next pass."""
        if self._state == "new":
            self._scheduled()
            schedule(self)

    def start_later(self, seconds: float) -> None:
        if self._state == "new":
            hub = current_hub()
            if hub is None:
                raise RuntimeError("gevent.spawn_later before the run: use gevent.spawn and gevent.sleep in it")
            self._scheduled()
            self._timer = hub.start_later(seconds, self)

    def _scheduled(self) -> None:
        self._state = "scheduled"
        if self._owner is not None:
            runs.user_greenlets.add(self)  # ended with its user at the end of the run

    @classmethod
    def spawn(cls, *args: Any, **kwargs: Any) -> Greenlet:
        g = cls(*args, **kwargs)
        g.start()
        return g

    @classmethod
    def spawn_later(cls, seconds: float, *args: Any, **kwargs: Any) -> Greenlet:
        if cls is Greenlet and not args and "run" not in kwargs:
            raise TypeError("")
        g = cls(*args, **kwargs)
        g.start_later(seconds)
        return g

    # -- ending, waiting

    def kill(self, exception: Any = GreenletExit, block: bool = True, timeout: float | None = None) -> None:
        """Raises `exception` in it (GreenletExit: a successful end); with `block`, waits for it to end."""
        if self._state in ("new", "scheduled"):
            self._state = "cancelled"  # never switched to: it never will be
            if self._timer is not None:
                current_hub().cancel(self._timer)  # type: ignore[union-attr]
            exc = _exception_instance(exception)
            if isinstance(exc, GreenletExit):
                self._finish(exc, None)
            else:
                self._finish(None, (type(exc), exc, None))
                runs.report_failure(self, exc, self._owner)
            return
        if self.ready():
            return
        hub = current_hub()
        assert hub is not None  # it has run, so the hub exists
        hub.throw(self, _exception_instance(exception))
        if block:
            self.join(timeout)

    def join(self, timeout: float | None = None) -> None:
        """Waits until it has ended, or `timeout` seconds."""
        _wait_ready(self, timeout)

    def get(self, block: bool = True, timeout: float | None = None) -> Any:
        """Its result, or its exception raised; gevent's Timeout if not ended in time (at once without
        `block`)."""
        if not self.ready() and (not block or not _wait_ready(self, timeout)):
            raise Timeout(timeout)
        if not self.successful():
            self._raise_exception()
        return self.value

    def __enter__(self) -> Greenlet:
        return self

    def __exit__(self, t: Any, v: Any, tb: Any) -> None:
        if t is None:
            try:
                self.join()
            finally:
                self.kill()
        else:
            self.kill((t, v, tb))

    # -- links

    def has_links(self) -> int:
        return len(self._links)

    def rawlink(self, callback: Callable[[Any], None]) -> None:
        """`callback(self)` once it has ended, from the hub (it must not block or raise)."""
        if not callable(callback):
            raise TypeError(f"Expected callable: {callback!r}")
        self._links.append(callback)
        if self.ready():
            self._schedule_links()

    def link(self, callback: Callable[[Any], Any]) -> None:
        """`callback(self)` once it has ended, in a greenlet of its own."""
        self.rawlink(SpawnedLink(callback))

    def link_value(self, callback: Callable[[Any], Any]) -> None:
        self.rawlink(SuccessSpawnedLink(callback))

    def link_exception(self, callback: Callable[[Any], Any]) -> None:
        self.rawlink(FailureSpawnedLink(callback))

    def unlink(self, callback: Callable[[Any], Any]) -> None:
        if callback in self._links:
            self._links.remove(callback)

    def unlink_all(self) -> None:
        del self._links[:]

    def _schedule_links(self) -> None:
        if not self._links or self._notifying:
            return
        self._notifying = True
        hub = current_hub()
        if hub is None:
            self._notify_links()
        else:
            notifier = hub.spawn(self._notify_links)
            setattr(notifier, "_owner", self._owner)  # noqa: B010  (what link callbacks spawn is the user's too)

    def _notify_links(self) -> None:
        try:
            while self._links:
                link = self._links.pop(0)
                try:
                    link(self)
                except Exception:
                    sys.excepthook(*sys.exc_info())  # gevent prints them too
        finally:
            self._notifying = False


def _wait_ready(obj: Any, timeout: float | None) -> bool:
    """Waits until `obj` (a Greenlet, an event...) is ready, or `timeout` seconds; returns whether it is."""
    if obj.ready():
        return True
    deadline = None if timeout is None else time.monotonic() + max(timeout, 0.0)
    hub = current_hub()
    if hub is None or in_main(hub):
        return bool(run_main_until(obj.ready, deadline))
    w = Waiter(hub)
    obj.rawlink(w.wake)
    try:
        w.block(deadline)
    finally:
        obj.unlink(w.wake)
    return bool(obj.ready())


def spawn_raw(function: Callable[..., Any], *args: Any, **kwargs: Any) -> greenlet:
    """A plain greenlet running `function` on the hub (no result kept); its exception is reported."""
    owner = runs.owner_of_current()

    def run(*_first_switch: Any) -> None:
        try:
            function(*args, **kwargs)
        except GreenletExit:
            pass
        except BaseException as e:
            runs.report_failure(g, e, owner)
            if isinstance(e, (SystemExit, KeyboardInterrupt)):
                raise

    hub = current_hub()
    g = greenlet(run, hub.main if hub is not None else _root())
    setattr(g, "_owner", owner)  # noqa: B010  (what it spawns belongs to the same user)
    schedule(g)
    return g


class _WaitIterator:
    """`iwait`: the objects, in the order they become ready, until `count` of them or the timeout."""

    def __init__(self, objects: Sequence[Any], timeout: float | None, count: int | None) -> None:
        self._objects = list(objects)
        self._count = len(self._objects) if count is None else min(count, len(self._objects))
        self._deadline = None if timeout is None else time.monotonic() + max(timeout, 0.0)
        self._ready: deque[Any] = deque()
        self._seen: set[int] = set()
        self._waiter: Waiter | None = None
        self._begun = False

    def _on_ready(self, obj: Any) -> None:
        if id(obj) not in self._seen:
            self._seen.add(id(obj))
            self._ready.append(obj)
            if self._waiter is not None:
                self._waiter.wake()

    def __iter__(self) -> Iterator[Any]:
        return self

    def __next__(self) -> Any:
        if not self._begun:
            self._begun = True
            for obj in self._objects:
                obj.rawlink(self._on_ready)
        if self._count <= 0:
            self._cleanup()
            raise StopIteration
        try:
            while not self._ready:
                hub = current_hub()
                if hub is None or in_main(hub):
                    got = run_main_until(lambda: bool(self._ready), self._deadline)
                else:
                    self._waiter = Waiter(hub)
                    got = self._waiter.block(self._deadline)
                    self._waiter = None
                if not got and not self._ready:
                    raise StopIteration
        except BaseException:
            self._cleanup()
            raise
        self._count -= 1
        return self._ready.popleft()

    def _cleanup(self) -> None:
        objects, self._objects = self._objects, []
        for obj in objects:
            obj.unlink(self._on_ready)

    def __enter__(self) -> _WaitIterator:
        return self

    def __exit__(self, *_exc: Any) -> None:
        self._cleanup()


def iwait(objects: Sequence[Any] | None, timeout: float | None = None, count: int | None = None) -> Iterator[Any]:
    """Yields the objects (greenlets, events, ...) as they become ready."""
    if objects is None:
        return iter([wait(None, timeout)])
    return _WaitIterator(objects, timeout, count)


def wait(objects: Sequence[Any] | None = None, timeout: float | None = None, count: int | None = None) -> Any:
    """The objects ready within `timeout`, in the order they became ready (all of them, or `count`).
    Without objects: waits until nothing runs on the hub any more, or `timeout` (in the main greenlet; a
    greenlet just waits for `timeout`, since the run itself keeps the hub busy)."""
    if objects is None:
        hub = current_hub()
        deadline = None if timeout is None else time.monotonic() + timeout
        if hub is None or in_main(hub):
            return run_main_until(lambda: hub is None or hub_is_idle(hub), deadline)
        return Waiter(hub).block(deadline)  # a wait nothing wakes: until the deadline, or forever
    return list(iwait(objects, timeout, count))


def joinall(
    greenlets: Iterable[Any], timeout: float | None = None, raise_error: bool = False, count: int | None = None
) -> list[Any]:
    """Waits for the greenlets to end; returns those that did within `timeout`. With `raise_error`, the
    first exception one of them ended with is raised."""
    greenlets = list(greenlets)
    if not raise_error:
        done: list[Any] = wait(greenlets, timeout=timeout, count=count)
        return done
    done = []
    for g in iwait(greenlets, timeout=timeout, count=count):
        if getattr(g, "exception", None) is not None:
            g._raise_exception()
        done.append(g)
    return done


def killall(
    greenlets: Iterable[Any], exception: Any = GreenletExit, block: bool = True, timeout: float | None = None
) -> None:
    """Kills them all; with `block`, waits until they have ended (gevent's Timeout after `timeout`)."""
    greenlets = list(greenlets)
    for g in greenlets:
        kill(g, exception)
    if block:
        alive = [g for g in greenlets if isinstance(g, Greenlet) and not g.dead]
        if alive and len(joinall(alive, timeout=timeout)) < len(alive):
            raise Timeout(timeout)


def kill(glet: greenlet, exception: Any = GreenletExit) -> None:
    """Kills a greenlet without waiting (a Greenlet, or a plain one such as a user's)."""
    if glet.dead:
        return
    if isinstance(glet, Greenlet):
        glet.kill(exception=exception, block=False)
        return
    hub = current_hub()
    if hub is not None:
        hub.throw(glet, _exception_instance(exception))

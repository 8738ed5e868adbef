"""`gevent.pool`: `Group` and `Pool`, with gevent's semantics on squall's hub: the fan-out locustfiles
use to make several requests at once (`pool.spawn` then `pool.join()`, `pool.map`, `imap_unordered`).

Each member is a `Greenlet` on the hub; requests they make through a user's client are in flight
together in the engine (it opens another keep-alive connection when the user's idle one is busy), so a
fan-out takes as long as its slowest request. A `Pool(size)` holds at most `size` members: `spawn` (and
`add`) wait for room. A member leaves its group when it ends (on the hub's next pass, as gevent's link
does). `map` and `imap` keep the order of their input; `imap_unordered` yields results as they come."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, Callable

from greenlet import GreenletExit, getcurrent

from squall.gevent_compat.event import Event
from squall.gevent_compat.greenlet import Greenlet, joinall, kill
from squall.gevent_compat.lock import DummySemaphore, Semaphore
from squall.gevent_compat.queue import Full, UnboundQueue
from squall.gevent_compat.timeout import Timeout

__all__ = ["Group", "Pool", "PoolFull"]


class Failure:
    """An exception in an imap's stream of results, raised when the reader comes to it."""

    __slots__ = ("exc", "raise_exception")

    def __init__(self, exc: BaseException, raise_exception: Callable[[], None] | None = None) -> None:
        self.exc = exc
        self.raise_exception = raise_exception


class IMapUnordered(Greenlet):
    """An iterator of `func`'s results over the items, computed by members of a group, as they come."""

    def __init__(
        self,
        func: Callable[..., Any],
        iterable: Iterable[Any],
        spawn: Callable[..., Greenlet],
        maxsize: int | None = None,
        _zipped: bool = False,
    ) -> None:
        Greenlet.__init__(self)
        self._spawn = spawn
        self._zipped = _zipped
        self.func = func
        self.iterable = iterable
        self.queue = UnboundQueue()
        self._result_semaphore = Semaphore(maxsize) if maxsize else None
        self._outstanding_tasks = 0
        self._max_index = -1
        self.finished = False

    def __iter__(self) -> Iterator[Any]:
        return self

    def __next__(self) -> Any:
        if self._result_semaphore is not None:
            self._result_semaphore.release()
        value = self._inext()
        if isinstance(value, Failure):
            if value.raise_exception is not None:
                value.raise_exception()
            raise value.exc
        return value

    def _inext(self) -> Any:
        return self.queue.get()

    def _ispawn(self, func: Callable[..., Any], item: Any, item_index: int) -> Greenlet:
        if self._result_semaphore is not None:
            self._result_semaphore.acquire()
        self._outstanding_tasks += 1
        g = self._spawn(func, *item) if self._zipped else self._spawn(func, item)
        g._imap_task_index = item_index
        g.rawlink(self._on_result)
        return g

    def _run(self) -> None:
        try:
            func = self.func
            for item in self.iterable:
                self._max_index += 1
                self._ispawn(func, item, self._max_index)
            self._on_finish(None)
        except BaseException as e:
            self._on_finish(e)
            raise

    def _on_result(self, greenlet: Greenlet) -> None:
        self._outstanding_tasks -= 1
        put_finished = False
        if self.ready() and self._outstanding_tasks <= 0 and not self.finished:
            self.finished = put_finished = True
        if greenlet.successful():
            self.queue.put(self._value_for_success(greenlet))
        else:
            self.queue.put(self._value_for_failure(greenlet))
        if put_finished:
            self.queue.put(self._value_for_self_finished())

    def _on_finish(self, exception: BaseException | None) -> None:
        if self.finished:
            return
        if exception is not None:
            self.finished = True
            self.queue.put(self._value_for_self_failure(exception))
        elif self._outstanding_tasks <= 0:
            self.finished = True
            self.queue.put(self._value_for_self_finished())

    def _value_for_success(self, greenlet: Greenlet) -> Any:
        return greenlet.value

    def _value_for_failure(self, greenlet: Greenlet) -> Any:
        assert greenlet.exception is not None
        return Failure(greenlet.exception, greenlet._raise_exception)

    def _value_for_self_finished(self) -> Any:
        return Failure(StopIteration())

    def _value_for_self_failure(self, exception: BaseException) -> Any:
        return Failure(exception)


class IMap(IMapUnordered):
    """`imap`: as `IMapUnordered`, but in the order of the items."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._results: dict[int, Any] = {}
        self.index = 0
        IMapUnordered.__init__(self, *args, **kwargs)

    def _inext(self) -> Any:
        if self.index in self._results:
            value = self._results.pop(self.index)
        else:
            while True:
                index, value = self.queue.get()
                if index == self.index:
                    break
                self._results[index] = value
        self.index += 1
        return value

    def _value_for_success(self, greenlet: Greenlet) -> Any:
        return (greenlet._imap_task_index, super()._value_for_success(greenlet))

    def _value_for_failure(self, greenlet: Greenlet) -> Any:
        return (greenlet._imap_task_index, super()._value_for_failure(greenlet))

    def _value_for_self_finished(self) -> Any:
        return (self._max_index + 1, super()._value_for_self_finished())

    def _value_for_self_failure(self, exception: BaseException) -> Any:
        return (self._max_index + 1, super()._value_for_self_failure(exception))


class pass_value:  # (gevent's name)
    """A link that calls `callback(result)` when the greenlet succeeded."""

    __slots__ = ("callback",)

    def __init__(self, callback: Callable[[Any], Any]) -> None:
        self.callback = callback

    def __call__(self, source: Greenlet) -> None:
        if source.successful():
            self.callback(source.value)

    def __hash__(self) -> int:
        return hash(self.callback)

    def __eq__(self, other: object) -> bool:
        return self.callback == getattr(other, "callback", other)


class Group:
    """The greenlets still running among those added (or spawned) to it; no bound on their number."""

    greenlet_class: type[Greenlet] = Greenlet

    def __init__(self, *args: Iterable[Greenlet]) -> None:
        assert len(args) <= 1, args
        self.greenlets: set[Any] = set(*args)
        for g in self.greenlets:
            g.rawlink(self._discard)
        self.dying: set[Any] = set()
        self._empty_event = Event()
        if not self.greenlets:
            self._empty_event.set()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} at {hex(id(self))} {self.greenlets}>"

    def __len__(self) -> int:
        return len(self.greenlets)

    def __contains__(self, item: object) -> bool:
        return item in self.greenlets

    def __iter__(self) -> Iterator[Any]:
        return iter(self.greenlets)

    def add(self, greenlet: Any) -> None:
        """Tracks `greenlet` until it ends."""
        rawlink = getattr(greenlet, "rawlink", None)
        if rawlink is not None:
            rawlink(self._discard)
        self.greenlets.add(greenlet)
        self._empty_event.clear()

    def _discard(self, greenlet: Any) -> None:
        self.greenlets.discard(greenlet)
        self.dying.discard(greenlet)
        if not self.greenlets:
            self._empty_event.set()

    def discard(self, greenlet: Any) -> None:
        """Stops tracking `greenlet`."""
        self._discard(greenlet)
        unlink = getattr(greenlet, "unlink", None)
        if unlink is not None:
            unlink(self._discard)

    def start(self, greenlet: Greenlet) -> None:
        self.add(greenlet)
        greenlet.start()

    def spawn(self, *args: Any, **kwargs: Any) -> Greenlet:
        """A new greenlet running `func(*args, **kwargs)`, tracked and started."""
        greenlet = self.greenlet_class(*args, **kwargs)
        self.start(greenlet)
        return greenlet

    def join(self, timeout: float | None = None, raise_error: bool = False) -> bool:
        """Waits until the group is empty (True), or `timeout` seconds (False); with `raise_error`, the
        exception one of its greenlets ended with is raised."""
        greenlets = list(self.greenlets) if raise_error else []
        result = self._empty_event.wait(timeout=timeout)
        for greenlet in greenlets:
            if greenlet.exception is not None:
                greenlet._raise_exception()
        return result

    def kill(self, exception: Any = GreenletExit, block: bool = True, timeout: float | None = None) -> None:
        """Kills every greenlet of the group; with `block`, waits until they have ended (up to `timeout`)."""
        timer = Timeout._start_new_or_dummy(timeout)
        try:
            while self.greenlets:
                for greenlet in list(self.greenlets):
                    if greenlet not in self.dying:
                        kill(greenlet, exception)
                        self.dying.add(greenlet)
                if not block:
                    break
                joinall(self.greenlets)
        except Timeout as ex:
            if ex is not timer:
                raise
        finally:
            timer.cancel()

    def killone(
        self, greenlet: Any, exception: Any = GreenletExit, block: bool = True, timeout: float | None = None
    ) -> None:
        if greenlet not in self.dying and greenlet in self.greenlets:
            greenlet.kill(exception, block=False)
            self.dying.add(greenlet)
            if block:
                greenlet.join(timeout)

    def full(self) -> bool:
        return False

    def wait_available(self, timeout: float | None = None) -> int | None:
        return None

    # -- mapping over items (gevent's GroupMappingMixin)

    def apply_cb(
        self,
        func: Callable[..., Any],
        args: Iterable[Any] | None = None,
        kwds: dict[str, Any] | None = None,
        callback: Callable[[Any], Any] | None = None,
    ) -> Any:
        result = self.apply(func, args, kwds)
        if callback is not None:
            Greenlet.spawn(callback, result)
        return result

    def apply_async(
        self,
        func: Callable[..., Any],
        args: Iterable[Any] | None = None,
        kwds: dict[str, Any] | None = None,
        callback: Callable[[Any], Any] | None = None,
    ) -> Greenlet:
        """A greenlet that calls `func(*args, **kwds)`; never waits, even when the group is full."""
        args, kwds = tuple(args or ()), dict(kwds or {})
        if self.full():
            return Greenlet.spawn(self.apply_cb, func, args, kwds, callback)
        greenlet = self.spawn(func, *args, **kwds)
        if callback is not None:
            greenlet.link(pass_value(callback))
        return greenlet

    def apply(
        self, func: Callable[..., Any], args: Iterable[Any] | None = None, kwds: dict[str, Any] | None = None
    ) -> Any:
        """`func(*args, **kwds)` run by a member (directly, if called from one); its result."""
        args, kwds = tuple(args or ()), dict(kwds or {})
        if getcurrent() in self:
            return func(*args, **kwds)
        return self.spawn(func, *args, **kwds).get()

    def map(self, func: Callable[..., Any], iterable: Iterable[Any]) -> list[Any]:
        """[func(item) for item in iterable], computed by members at once; the first exception is raised."""
        return [g.get() for g in [self.spawn(func, item) for item in iterable]]

    def map_cb(
        self, func: Callable[..., Any], iterable: Iterable[Any], callback: Callable[[Any], Any] | None = None
    ) -> list[Any]:
        result = self.map(func, iterable)
        if callback is not None:
            callback(result)
        return result

    def map_async(
        self, func: Callable[..., Any], iterable: Iterable[Any], callback: Callable[[Any], Any] | None = None
    ) -> Greenlet:
        return Greenlet.spawn(self.map_cb, func, iterable, callback)

    def _imap(
        self, cls: type[IMapUnordered], func: Callable[..., Any], *iterables: Iterable[Any], **kwargs: Any
    ) -> IMapUnordered:
        maxsize = kwargs.pop("maxsize", None)
        if kwargs:
            raise TypeError("Unsupported keyword arguments")
        return cls.spawn(func, zip(*iterables), spawn=self.spawn, _zipped=True, maxsize=maxsize)  # type: ignore[return-value]

    def imap(self, func: Callable[..., Any], *iterables: Iterable[Any], **kwargs: Any) -> IMapUnordered:
        """An iterator of func's results, in the order of the items (`maxsize`: results held at most)."""
        return self._imap(IMap, func, *iterables, **kwargs)

    def imap_unordered(self, func: Callable[..., Any], *iterables: Iterable[Any], **kwargs: Any) -> IMapUnordered:
        """An iterator of func's results, as they come."""
        return self._imap(IMapUnordered, func, *iterables, **kwargs)


class PoolFull(Full):
    """A full pool, when `add` was told not to wait (or its timeout passed)."""


class Pool(Group):
    """A group of at most `size` running greenlets (None: no bound): `spawn` waits for room."""

    def __init__(self, size: int | None = None, greenlet_class: type[Greenlet] | None = None) -> None:
        if size is not None and size < 0:
            raise ValueError(f"size must not be negative: {size!r}")
        Group.__init__(self)
        self.size = size
        if greenlet_class is not None:
            self.greenlet_class = greenlet_class
        self._semaphore: Semaphore | DummySemaphore = DummySemaphore(size) if size is None else Semaphore(size)

    def wait_available(self, timeout: float | None = None) -> int:
        """Waits until a greenlet can be added without waiting; returns how many can."""
        return self._semaphore.wait(timeout=timeout)

    def full(self) -> bool:
        return self.free_count() <= 0

    def free_count(self) -> int:
        if self.size is None:
            return 1
        return max(0, self.size - len(self))

    def start(self, greenlet: Greenlet, blocking: bool = True, timeout: float | None = None) -> None:
        self.add(greenlet, blocking, timeout)
        greenlet.start()

    def add(self, greenlet: Any, blocking: bool = True, timeout: float | None = None) -> None:
        """Tracks `greenlet`, waiting for room first (PoolFull without `blocking`, or after `timeout`)."""
        if not self._semaphore.acquire(blocking=blocking, timeout=timeout):
            raise PoolFull()
        try:
            Group.add(self, greenlet)
        except BaseException:
            self._semaphore.release()
            raise

    def _discard(self, greenlet: Any) -> None:
        Group._discard(self, greenlet)
        self._semaphore.release()

"""`gevent.queue`: `Queue` (joinable, as gevent's is: `JoinableQueue` is the same class), `SimpleQueue`,
`LifoQueue`, `PriorityQueue`, `UnboundQueue`, with gevent's semantics on squall's hub. `Empty` and `Full`
are the standard library's, as in gevent.

`put` on a full queue and `get` on an empty one wait (up to `timeout`, raising Full or Empty after it);
each `put` wakes the first waiting getter, each `get` the first waiting putter. A `maxsize` of None (or
0, or less) is no bound. `get` in the main greenlet on an empty queue runs the hub until an item comes
(see `_waiting`)."""

from __future__ import annotations

import heapq
import warnings
from collections import deque
from queue import Empty, Full
from typing import Any

from squall.gevent_compat._waiting import Waiter, wait_until, wake_some
from squall.gevent_compat.event import Event

__all__ = ["Empty", "Full", "JoinableQueue", "LifoQueue", "PriorityQueue", "Queue", "SimpleQueue", "UnboundQueue"]


class SimpleQueue:
    """A FIFO queue of greenlets' items, without `task_done`/`join`."""

    def __init__(self, maxsize: int | None = None, items: Any = (), _warn_depth: int = 2) -> None:
        if maxsize is not None and maxsize <= 0:
            if maxsize == 0:
                warnings.warn(
                    "Queue(0) now equivalent to Queue(None); if you want a channel, use Channel",
                    DeprecationWarning,
                    stacklevel=_warn_depth,
                )
            maxsize = None
        self._maxsize = maxsize
        self.queue = self._create_queue(items)
        self.getters: deque[Waiter] = deque()
        self.putters: deque[Waiter] = deque()

    # -- the container, which subclasses change

    def _create_queue(self, items: Any = ()) -> Any:
        return deque(items)

    def _put(self, item: Any) -> None:
        self.queue.append(item)

    def _get(self) -> Any:
        return self.queue.popleft()

    def _peek(self) -> Any:
        return self.queue[0]

    # -- sizes

    @property
    def maxsize(self) -> int | None:
        return self._maxsize

    @maxsize.setter
    def maxsize(self, value: int | None) -> None:
        self._maxsize = value if value is not None and value > 0 else None
        self._wake_putters()

    def qsize(self) -> int:
        return len(self.queue)

    def __len__(self) -> int:
        return self.qsize()

    def __bool__(self) -> bool:
        return True  # as gevent's: a queue is true even when empty

    def _has_items(self) -> bool:
        return bool(self.qsize())

    def empty(self) -> bool:
        return not self.qsize()

    def full(self) -> bool:
        return self._maxsize is not None and self.qsize() >= self._maxsize

    def _free(self) -> int:
        return len(self.putters) if self._maxsize is None else max(self._maxsize - self.qsize(), 0)

    def _wake_getters(self) -> None:
        wake_some(self.getters, self.qsize())

    def _wake_putters(self) -> None:
        wake_some(self.putters, self._free())

    def copy(self) -> SimpleQueue:
        return type(self)(self._maxsize, self.queue)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} at {hex(id(self))} maxsize={self._maxsize!r} queue={list(self.queue)!r}>"

    # -- putting and getting

    def put(self, item: Any, block: bool = True, timeout: float | None = None) -> None:
        """Adds `item`; on a full queue, with `block`, waits for room (Full after `timeout` seconds)."""
        if self.full() and (
            not block or not wait_until(self.putters, lambda: not self.full(), timeout, self._wake_putters)
        ):
            raise Full
        self._put(item)
        self._did_put_task()
        self._wake_getters()

    def _did_put_task(self) -> None:
        pass

    def put_nowait(self, item: Any) -> None:
        self.put(item, False)

    def get(self, block: bool = True, timeout: float | None = None) -> Any:
        """Takes the next item; on an empty queue, with `block`, waits for one (Empty after `timeout`)."""
        if not self.qsize() and (
            not block or not wait_until(self.getters, self._has_items, timeout, self._wake_getters)
        ):
            raise Empty
        item = self._get()
        self._wake_putters()
        return item

    def get_nowait(self) -> Any:
        return self.get(False)

    def peek(self, block: bool = True, timeout: float | None = None) -> Any:
        """The next item, left in the queue; waits for one as `get` does."""
        if not self.qsize() and (
            not block or not wait_until(self.getters, self._has_items, timeout, self._wake_getters)
        ):
            raise Empty
        item = self._peek()
        self._wake_getters()  # the item is still there for a getter waiting behind this peek
        return item

    def peek_nowait(self) -> Any:
        return self.peek(False)

    def __iter__(self) -> SimpleQueue:
        return self

    def __next__(self) -> Any:
        result = self.get()
        if result is StopIteration:
            raise StopIteration
        return result


class Queue(SimpleQueue):
    """A FIFO queue with `task_done()` and `join(timeout)` (gevent's `Queue` is joinable)."""

    def __init__(self, maxsize: int | None = None, items: Any = (), unfinished_tasks: int | None = None) -> None:
        super().__init__(maxsize, items, _warn_depth=3)
        self._cond = Event()
        self.unfinished_tasks = unfinished_tasks if unfinished_tasks is not None else len(self.queue)
        if self.unfinished_tasks == 0:
            self._cond.set()

    def copy(self) -> Queue:
        return type(self)(self._maxsize, self.queue, self.unfinished_tasks)

    def _did_put_task(self) -> None:
        self.unfinished_tasks += 1
        self._cond.clear()

    def task_done(self) -> None:
        """One item taken with `get` has been processed."""
        if self.unfinished_tasks <= 0:
            raise ValueError("task_done() called too many times")
        self.unfinished_tasks -= 1
        if self.unfinished_tasks == 0:
            self._cond.set()

    def join(self, timeout: float | None = None) -> bool:
        """Waits until every item put has been processed (True), or `timeout` seconds (False)."""
        return self._cond.wait(timeout=timeout)


JoinableQueue = Queue


class UnboundQueue(Queue):
    """A queue without a bound: `put` never waits."""

    def __init__(self, maxsize: int | None = None, items: Any = ()) -> None:
        if maxsize is not None:
            raise ValueError("UnboundQueue has no maxsize")
        super().__init__(maxsize, items)


class PriorityQueue(Queue):
    """A queue whose `get` returns the lowest item first (`heapq`'s order)."""

    def _create_queue(self, items: Any = ()) -> Any:
        q = list(items)
        heapq.heapify(q)
        return q

    def _put(self, item: Any) -> None:
        heapq.heappush(self.queue, item)

    def _get(self) -> Any:
        return heapq.heappop(self.queue)


class LifoQueue(Queue):
    """A queue whose `get` returns the most recent item first."""

    def _create_queue(self, items: Any = ()) -> Any:
        return list(items)

    def _put(self, item: Any) -> None:
        self.queue.append(item)

    def _get(self) -> Any:
        return self.queue.pop()

    def _peek(self) -> Any:
        return self.queue[-1]

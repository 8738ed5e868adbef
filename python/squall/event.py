"""Event hooks (`locust.events`): listeners are called with Locust's keyword arguments."""

from __future__ import annotations

import logging
import time
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Callable, TypeVar

from squall import log
from squall.exception import InterruptTaskSet, RescheduleTask, RescheduleTaskImmediately, StopUser

Listener = TypeVar("Listener", bound=Callable[..., Any])

# What a listener may raise through `fire`, as in Locust: a request listener's StopUser or RescheduleTask
# acts on the user whose request it was.
FLOW = (StopUser, RescheduleTask, RescheduleTaskImmediately, InterruptTaskSet)


class EventHook:
    """Listeners, called in order with the keyword arguments Locust documents for the event."""

    def __init__(self) -> None:
        self._handlers: list[Callable[..., Any]] = []

    def add_listener(self, handler: Listener) -> Listener:
        self._handlers.append(handler)
        return handler  # so that it works as a decorator

    def remove_listener(self, handler: Callable[..., Any]) -> None:
        self._handlers.remove(handler)

    def __bool__(self) -> bool:
        return bool(self._handlers)

    def fire(self, *, reverse: bool = False, **kwargs: Any) -> None:
        """Each listener in turn. One that raises is logged, as Locust's EventHook logs it ("Uncaught
        exception in event handler" and the traceback, on the root logger), and the others still run;
        the run goes on and exits 2 at its end (`log.unhandled_greenlet_exception`, as in Locust), or 1
        for an `init` listener's, at once. FLOW's exceptions go through, to the user."""
        for handler in reversed(self._handlers) if reverse else list(self._handlers):
            try:
                handler(**kwargs)
            except FLOW:
                raise
            except Exception:
                logging.error("Uncaught exception in event handler: \n%s", traceback.format_exc())
                log.unhandled_greenlet_exception = True

    @contextmanager
    def measure(
        self, request_type: str, name: str, response_length: int = 0, context: Any = None
    ) -> Iterator[dict[str, Any]]:
        """Locust's: fires the event (`request`) once the block ends, with the block's time as the
        response time; an exception in the block is the request's, and does not propagate (as in Locust).
        The block may add to or change the dict it gets, which is what is fired."""
        request_meta: dict[str, Any] = {
            "request_type": request_type,
            "name": name,
            "response_length": response_length,
            "context": context or {},
            "exception": None,
            "start_time": time.time(),
        }
        start = time.perf_counter()
        try:
            yield request_meta
        except Exception as e:
            request_meta["exception"] = e
        finally:
            request_meta["response_time"] = (time.perf_counter() - start) * 1000
            self.fire(**request_meta)


class RequestHook(EventHook):
    """`events.request`. In Locust the statistics are one of its listeners, so a request a locustfile
    fires itself (Locust's way to test any other protocol: a custom client around XML-RPC, gRPC, a
    database, timing each call) is counted like any other. Here the statistics are the engine's: while
    a run is on, `recorder` (squall.stats.FiredRequests) puts each fired request into the engine's
    recorder, so it reaches the tables, files, dashboard, thresholds and --find-limit as the engine's
    own requests do. squall's own clients have recorded theirs in the engine already: they `notify`
    the listeners only."""

    def __init__(self) -> None:
        super().__init__()
        self.recorder: Callable[..., None] | None = None
        # While a run is on: called when a listener is added, so that native users (squall.user.native,
        # which run only while nobody listens) go on in Python, where the listener sees their requests.
        self.on_listen: Callable[[], None] | None = None

    def add_listener(self, handler: Listener) -> Listener:
        super().add_listener(handler)
        if self.on_listen is not None:
            self.on_listen()
        return handler

    def fire(self, *, reverse: bool = False, **kwargs: Any) -> None:
        if self.recorder is not None:
            self.recorder(**kwargs)
        super().fire(reverse=reverse, **kwargs)

    def notify(self, **kwargs: Any) -> None:
        """The listeners, for a request the engine has recorded."""
        super().fire(**kwargs)


class Events:
    """The hooks a locustfile can listen to: all of Locust's, so that files listening to any of them load;
    squall fires `init`, `init_command_line_parser`, `test_start`, `spawning_complete`, `test_stopping`,
    `test_stop`, `quitting`, `request` and `user_error`."""

    def __init__(self) -> None:
        self.request = RequestHook()
        self.user_error = EventHook()
        self.report_to_master = EventHook()
        self.worker_report = EventHook()
        self.worker_connect = EventHook()
        self.spawning_complete = EventHook()
        self.quitting = EventHook()
        self.quit = EventHook()
        self.init = EventHook()
        self.init_command_line_parser = EventHook()
        self.test_start = EventHook()
        self.test_stopping = EventHook()
        self.test_stop = EventHook()
        self.reset_stats = EventHook()
        self.cpu_warning = EventHook()
        self.heartbeat_sent = EventHook()
        self.heartbeat_received = EventHook()
        self.usage_monitor = EventHook()


events = Events()

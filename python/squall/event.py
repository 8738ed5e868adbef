"""Event hooks (`locust.events`): listeners are called with Locust's keyword arguments."""

from __future__ import annotations

from typing import Any, Callable, TypeVar

Listener = TypeVar("Listener", bound=Callable[..., Any])


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
        for handler in reversed(self._handlers) if reverse else list(self._handlers):
            handler(**kwargs)


class Events:
    """The hooks a locustfile can listen to: all of Locust's, so that files listening to any of them load;
    squall fires `init`, `init_command_line_parser`, `test_start`, `spawning_complete`, `test_stopping`,
    `test_stop`, `quitting`, `request` and `user_error`."""

    def __init__(self) -> None:
        self.request = EventHook()
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

"""Event hooks (`locust.events`): listeners are called with Locust's keyword arguments."""


class EventHook:
    def __init__(self):
        self._handlers = []

    def add_listener(self, handler):
        self._handlers.append(handler)
        return handler  # so that it works as a decorator

    def remove_listener(self, handler):
        self._handlers.remove(handler)

    def __bool__(self):
        return bool(self._handlers)

    def fire(self, *, reverse=False, **kwargs):
        for handler in reversed(self._handlers) if reverse else list(self._handlers):
            handler(**kwargs)


class Events:
    """The hooks a locustfile can listen to; unknown ones read as empty hooks so old files still load."""

    NAMES = (
        "request",
        "user_error",
        "report_to_master",
        "worker_report",
        "worker_connect",
        "spawning_complete",
        "quitting",
        "quit",
        "init",
        "init_command_line_parser",
        "test_start",
        "test_stopping",
        "test_stop",
        "reset_stats",
        "cpu_warning",
        "heartbeat_sent",
        "heartbeat_received",
        "usage_monitor",
    )

    def __init__(self):
        for name in self.NAMES:
            setattr(self, name, EventHook())


events = Events()

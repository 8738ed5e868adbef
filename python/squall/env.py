"""The environment a locustfile sees (`self.environment`, `locust.env`): host, events, the runner,
options, and the exceptions its tasks raised."""

import itertools

from squall.event import events as default_events
from squall.runners import LocalRunner


class Environment:
    def __init__(self, hub=None, host=None, user_classes=(), parsed_options=None, events=None, shape_class=None):
        self.hub = hub
        self.host = host
        self.user_classes = list(user_classes)
        self.parsed_options = parsed_options
        self.events = events or default_events
        self.shape_class = shape_class
        self.runner = LocalRunner(self)
        self.process_exit_code = None
        self.exceptions = {}  # (message, traceback) -> {"count", "message", "traceback"}
        self._user_ids = itertools.count(1)
        self.stats = None

    def next_user_id(self):
        return next(self._user_ids)

    def report_exception(self, user, exc, tb):
        """An exception in a task: counted with its traceback, and the user goes on (as in Locust)."""
        message = f"{type(exc).__name__}({exc!r})" if not str(exc) else f"{type(exc).__name__}: {exc}"
        entry = self.exceptions.setdefault((message, tb), {"count": 0, "message": message, "traceback": tb})
        entry["count"] += 1
        self.events.user_error.fire(user_instance=user, exception=exc, tb=exc.__traceback__)

    def user_stopped(self, user):
        self.runner.users.pop(user, None)
        if self.hub is not None:
            self.hub.close_user(user.user_id)

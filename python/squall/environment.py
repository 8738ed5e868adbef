"""The environment a locustfile sees (`self.environment`): host, events, the runner, options."""

import itertools
import os
import traceback

from squall.event import events as default_events

_SQUALL_DIR = os.path.dirname(os.path.abspath(__file__))


def user_traceback(exc):
    """The traceback of an exception from a locustfile, without squall's own frames before the
    user's code (the scheduler and task loop are noise to the reader)."""
    frames = traceback.extract_tb(exc.__traceback__)
    first_user = next((i for i, f in enumerate(frames) if not f.filename.startswith(_SQUALL_DIR)), 0)
    lines = ["Traceback (most recent call last):\n", *traceback.format_list(frames[first_user:]),
             *traceback.format_exception_only(type(exc), exc)]
    return "".join(lines)


class Runner:
    """What locustfiles use of Locust's runner: `quit()`, `user_count`, `state`."""

    def __init__(self, environment):
        self.environment = environment
        self.users = {}  # user -> greenlet
        self.state = "ready"
        self.quitting = False
        # Set at the end of a run with --stop-timeout: users stop at their next wait, after their task.
        self.stopping = False
        self.target_user_count = 0

    @property
    def user_count(self):
        return len(self.users)

    def quit(self):
        self.quitting = True

    def stop(self):
        self.quitting = True


class Environment:
    def __init__(self, hub=None, host=None, user_classes=(), parsed_options=None, events=None, shape_class=None):
        self.hub = hub
        self.host = host
        self.user_classes = list(user_classes)
        self.parsed_options = parsed_options
        self.events = events or default_events
        self.shape_class = shape_class
        self.runner = Runner(self)
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

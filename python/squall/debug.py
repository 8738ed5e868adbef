"""`run_single_user` (`locust.debug`): one user of a class, in this process, for debugging a locustfile."""

import contextlib

from squall import _engine
from squall.env import Environment
from squall.hub import Hub


def run_single_user(user_class, host=None, **_ignored):
    """Runs one user of `user_class` until it stops (or Ctrl-C), for debugging a locustfile."""
    hub = Hub(_engine.ScriptEngine())
    env = Environment(hub=hub, host=host or user_class.host, user_classes=[user_class])
    u = user_class(env)
    env.runner.users[u] = hub.spawn(u.run)
    with contextlib.suppress(KeyboardInterrupt):
        hub.run_until(None)

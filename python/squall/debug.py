"""`run_single_user` (`locust.debug`): one user of a class, in this process, for debugging a locustfile."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from squall import _engine
from squall.env import Environment
from squall.runtime.hub import Hub

if TYPE_CHECKING:
    from squall.user.users import User


def run_single_user(user_class: type[User], host: str | None = None, **_ignored: Any) -> None:
    """Runs one user of `user_class` until it stops (or Ctrl-C), for debugging a locustfile."""
    hub = Hub(_engine.ScriptEngine())
    env = Environment(hub=hub, host=host or user_class.host, user_classes=[user_class])
    u = user_class(env)
    env.runner.users[u] = hub.spawn(u.run)
    with contextlib.suppress(KeyboardInterrupt):
        hub.run_until(None)

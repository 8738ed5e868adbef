"""The run's side of squall's gevent: which user spawned a greenlet, where a greenlet's exception goes,
and what becomes of users' greenlets when the run ends.

A greenlet spawned by a user (in `on_start`, a task, a pool's worker, or a greenlet spawned by one of
those) belongs to that user. When the run ends, the users' greenlets are killed together with the users
(before `test_stop`), so that a background loop never keeps a run from ending; greenlets spawned from
the main greenlet (module level, `init`, `test_start` listeners) belong to no user and are left alone,
as in Locust, where they live until the process exits: they simply stop being run when the run's hub
stops, unless a later listener waits on them. As gevent does, a greenlet that stops being run mid-way
does not run its `finally` blocks then; a greenlet killed with the users does.

An exception that ends a greenlet is printed as gevent's hub prints it, and counted in the run's
exceptions like a task's (the exceptions table, CSV and `user_error`, whose `user_instance` is the
owning user, or None for a greenlet of the main greenlet's)."""

from __future__ import annotations

import sys
import time
import traceback
import weakref
from typing import TYPE_CHECKING, Any, Protocol, cast

from greenlet import getcurrent, greenlet

from squall.exception import user_traceback
from squall.gevent_compat._waiting import adopt
from squall.runtime.hub import current_hub
from squall.user.users import User

if TYPE_CHECKING:
    from types import FrameType

    from squall.env import Environment
    from squall.runtime.hub import Hub


class Killable(Protocol):
    def kill(self, exception: Any = ..., block: bool = ..., timeout: float | None = ...) -> None: ...


_environment: Environment | None = None
# The users' greenlets that have started and not finished, and those of them killed at the end already.
user_greenlets: set[Killable] = set()
_ended: weakref.WeakSet[Any] = weakref.WeakSet()
# Raw greenlets (users' own, link callbacks) and the user found running in each, once looked up.
_owners: weakref.WeakKeyDictionary[greenlet, User | None] = weakref.WeakKeyDictionary()


def bind(env: Environment) -> None:
    """The run has started (called as a test begins, `ScriptTest`): its environment counts the exceptions of greenlets
    no user owns, and greenlets spawned before its hub existed start."""
    global _environment
    _environment = env
    if env.hub is not None:
        adopt(env.hub)


def owner_of_current() -> User | None:
    """The user whose greenlet, or whose greenlets' greenlet, is running now (None in the main one)."""
    g = getcurrent()
    owner = getattr(g, "_owner", False)
    if owner is not False:  # one of squall's gevent greenlets: its owner was settled when it was made
        return cast("User | None", owner)
    hub = current_hub()
    if hub is not None and g is hub.main:
        return None
    try:
        return _owners[g]
    except KeyError:
        found = _user_running_here()
        _owners[g] = found
        return found


def _user_running_here() -> User | None:
    """A user's greenlet runs `User.run` at its bottom (a greenlet's frames end at its own first one)."""
    frame: FrameType | None = sys._getframe(1)
    found = None
    while frame is not None:
        if frame.f_code.co_name == "run":
            candidate = frame.f_locals.get("self")
            if isinstance(candidate, User):
                found = candidate
        frame = frame.f_back
    return found


def report_failure(glet: Any, exc: BaseException, owner: User | None) -> None:
    """An exception ended `glet`: printed as gevent's hub prints it, counted as a task's would be."""
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    sys.stderr.write(f"{text}{stamp} {glet!r} failed with {type(exc).__name__}\n\n")
    env = owner.environment if owner is not None else _environment
    if env is None:
        return
    try:
        # user_error's user_instance is None for a greenlet no user owns (Locust fires nothing for it).
        env.report_exception(cast("User", owner), exc, user_traceback(exc))
    except Exception:  # a user_error listener's own failure must not take the greenlet's bookkeeping down
        traceback.print_exc()


def kill_user_greenlets() -> None:
    """Ends the users' greenlets as the users end (GreenletExit, so their `finally` blocks run)."""
    for g in list(user_greenlets):
        if g not in _ended:
            _ended.add(g)
            g.kill(block=False)


def finish_user_greenlets(hub: Hub, by: float) -> None:
    """After the users have ended: ends the greenlets their `on_stop` spawned too, and runs the hub until
    every user's greenlet is gone or the monotonic time `by`."""
    kill_user_greenlets()
    while user_greenlets and time.monotonic() < by:
        hub.run_until(min(by, time.monotonic() + 0.05))
        kill_user_greenlets()

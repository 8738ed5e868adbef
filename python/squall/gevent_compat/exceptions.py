"""`gevent.exceptions`: the errors gevent's API raises, under gevent's names."""

from __future__ import annotations

from greenlet import GreenletExit

__all__ = [
    "BlockingSwitchOutError",
    "ConcurrentObjectUseError",
    "GreenletExit",
    "InvalidSwitchError",
    "InvalidThreadUseError",
    "LoopExit",
]


class LoopExit(Exception):
    """A wait that nothing could ever end: gevent's error when its loop has nothing left to run. Under
    squall: a wait in the main greenlet (a listener, module-level code) with no timeout while nothing
    runs on the hub that could end it."""


class BlockingSwitchOutError(AssertionError):
    pass


class InvalidSwitchError(AssertionError):
    pass


class ConcurrentObjectUseError(AssertionError):
    pass


class InvalidThreadUseError(RuntimeError):
    pass

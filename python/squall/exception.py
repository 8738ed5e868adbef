"""The exceptions locustfiles raise and catch (`locust.exception`), and the traceback squall reports
for one."""

from __future__ import annotations

import os
import traceback


class LocustError(Exception):
    pass


class ResponseError(Exception):
    pass


class CatchResponseError(Exception):
    pass


class MissingWaitTimeError(LocustError):
    pass


class StopUser(Exception):
    """Raised in a task: this user stops (its on_stop runs)."""


class InterruptTaskSet(Exception):
    """Raised by `TaskSet.interrupt()`: control goes back to the parent."""

    def __init__(self, reschedule: bool = True) -> None:
        super().__init__()
        self.reschedule = reschedule


class RescheduleTask(Exception):
    """Raised in a task: the user waits and picks another task."""


class RescheduleTaskImmediately(Exception):
    """Raised in a task: the user picks another task without waiting."""


class UserHung(BaseException):
    """Raised by squall into a user whose task ran too long without yielding (no request, wait or
    sleep): it ends that user. A BaseException, so that task code's `except Exception` lets it pass."""


_SQUALL_DIR = os.path.dirname(os.path.abspath(__file__))


def user_traceback(exc: BaseException) -> str:
    """The traceback of an exception from a locustfile, without squall's own frames before the
    user's code (the scheduler and task loop are noise to the reader)."""
    frames = traceback.extract_tb(exc.__traceback__)
    first_user = next((i for i, f in enumerate(frames) if not f.filename.startswith(_SQUALL_DIR)), 0)
    lines = [
        "Traceback (most recent call last):\n",
        *traceback.format_list(frames[first_user:]),
        *traceback.format_exception_only(type(exc), exc),
    ]
    return "".join(lines)

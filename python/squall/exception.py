"""The exceptions locustfiles raise and catch (`locust.exception`)."""


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

    def __init__(self, reschedule=True):
        super().__init__()
        self.reschedule = reschedule


class RescheduleTask(Exception):
    """Raised in a task: the user waits and picks another task."""


class RescheduleTaskImmediately(Exception):
    """Raised in a task: the user picks another task without waiting."""


class UserHung(BaseException):
    """Raised by squall into a user whose task ran too long without yielding (no request, wait or
    sleep): it ends that user. A BaseException, so that task code's `except Exception` lets it pass."""

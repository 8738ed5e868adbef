"""What `squall -f` checks before a run, so that a run that cannot do what was asked is one line and
exit 2 before anything is sent, as a bad command line is (Locust starts such runs and fails each user,
or runs nothing for `-t`).

Policy: `-u 0` is an error unless a shape sets the users (a User class without tasks is not: it runs,
as in Locust); an HTTP user needs a host, from `-H` or its class, whose scheme is http or https
(an MQTT user's is its broker: mqtt://, mqtts:// or a bare host name); `-H` itself must be http(s)://
or mqtt(s)://, with a host (squall.load_values: a port in range, no whitespace), when an HTTP or MQTT
user runs (a custom client's users alone take any -H, as in Locust: gRPC's host:port). A dashboard run that
waits for Start may get its host from the page, so the missing host is not checked there; the page's
Start gets these same checks (squall.web.controls)."""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from squall.contrib.mqtt import MqttUser
from squall.errors import UsageError
from squall.load_values import NO_USERS, url_problem
from squall.user.users import SessionUser

if TYPE_CHECKING:
    from squall.shape import LoadTestShape
    from squall.user.users import User

HTTP = ("http", "https")
MQTT = ("mqtt", "mqtts")


def _scheme_error(where: str, url: str, allowed: tuple[str, ...]) -> UsageError | None:
    return url_problem(where, url, allowed)  # the dashboard's Start checks its host with it too


def check(
    classes: list[type[User]],
    host: str | None,
    users: int,
    shape: type[LoadTestShape] | None,
    host_from_page: bool,
) -> None:
    """Raises UsageError with the first problem (see the module's policy)."""
    if users < 1 and shape is None:
        raise UsageError(NO_USERS)
    # -H is every User's host, as in Locust: a URL for HTTP and MQTT users, and whatever a custom client
    # takes for the others (gRPC's host:port, a database's address), which they alone read.
    if host and any(issubclass(c, (SessionUser, MqttUser)) for c in classes):
        problem = _scheme_error("-H/--host", host, HTTP + MQTT)
        if problem:
            raise problem
    given_http = bool(host) and urlsplit(host or "").scheme.lower() in HTTP
    # A User class without tasks (none declared, or none left by -T/-E) is not refused: as in Locust, it
    # runs and each of its users' turns is an error in the exceptions (squall.user.task).
    for c in classes:
        if issubclass(c, SessionUser) and not given_http:
            if not c.host:
                if host_from_page:
                    continue
                raise UsageError(f"User class {c.__name__} has no host: set `host` on the class or give -H/--host")
            problem = _scheme_error(f"the host of {c.__name__}", c.host, HTTP)
            if problem:
                raise problem
        if issubclass(c, MqttUser) and c.host and "://" in c.host:
            problem = _scheme_error(f"the host of {c.__name__}", c.host, MQTT)
            if problem:
                raise problem

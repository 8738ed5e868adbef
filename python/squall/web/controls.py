"""The dashboard's controls (Start, Edit, Stop, Reset): their bodies read and checked on the server's
thread, so that the run's thread gets only commands it can carry out.

Policy: the page's controls get the command line's validation (squall.load_values), with its one-line
messages. The page starts nothing that `-u`/`-r`/`-H` refuse: `{"users": 1e999}` is `invalid number of
users '1e999'`, `{"spawn_rate": NaN}` `invalid spawn rate 'NaN'`, `{"users": 10000000}` the open-file
limit's message of `-u 10000000`. A body is JSON (at most BODY_LIMIT bytes), an object; its numbers are
read as their text, as the command line reads its arguments, so that a number is named as it was sent and
no float conversion can overflow. A missing value is an empty text (`invalid number of users ''`)."""

from __future__ import annotations

import json
from typing import Any, Callable

from squall import load_values
from squall.errors import UsageError
from squall.runtime import limits

BODY_LIMIT = 65536
HTTP = ("http", "https")
MQTT = ("mqtt", "mqtts")


def read_body(raw: bytes) -> dict[str, Any]:
    """A control's body: a JSON object, its numbers as their text (ValueError with one line otherwise)."""
    if not raw.strip():
        return {}
    try:
        body = json.loads(raw, parse_int=str, parse_float=str, parse_constant=str)
    except (ValueError, RecursionError):  # not JSON, not UTF-8, nested past the parser's depth
        raise ValueError("the body is not JSON") from None
    if not isinstance(body, dict):
        raise ValueError("the body must be a JSON object")
    return body


def _text(body: dict[str, Any], key: str) -> str:
    """A value as the command line would have had it: JSON numbers and strings as their text, missing or
    null as empty, anything else (true, a list) as its JSON."""
    value = body.get(key)
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value)


# The command line's own checks of a start's users and host (squall -f's run_checks, for its User classes);
# UsageError with its message. Without one, the users must be at least 1 and the host an http(s) or
# mqtt(s) URL, as -H's.
StartCheck = Callable[[int, str], None]


def validate(
    action: str,
    body: dict[str, Any],
    state: str,
    form: dict[str, Any] | None = None,
    check: StartCheck | None = None,
) -> dict[str, Any]:
    """A control command's arguments (ValueError with the one-line reason: see the module's policy)."""
    try:
        return _validate(action, body, state, form or {}, check)
    except UsageError as e:
        raise ValueError(str(e)) from None


def _validate(
    action: str, body: dict[str, Any], state: str, form: dict[str, Any], check: StartCheck | None
) -> dict[str, Any]:
    if action == "start":
        if state not in ("ready", "stopped"):
            raise ValueError("a test is running: stop it first")
        users = load_values.users(_text(body, "users"))
        spawn_rate = load_values.spawn_rate(_text(body, "spawn_rate"))
        host = _text(body, "host").strip()
        if not host and form.get("host_required"):
            raise ValueError(f"a host is needed: {form['host_required']} has no host attribute and none was given")
        if check is not None:
            check(users, host)
        elif users < 1:
            raise UsageError(load_values.NO_USERS)
        elif host and (problem := load_values.url_problem("-H/--host", host, HTTP + MQTT)) is not None:
            raise problem
        limits.check_open_files(users)
        return {"users": users, "spawn_rate": spawn_rate, "host": host}
    if action == "users":
        if state not in ("spawning", "running"):
            raise ValueError("the run is not running")
        users = load_values.users(_text(body, "users"))
        spawn_rate = load_values.spawn_rate(_text(body, "spawn_rate"))
        limits.check_open_files(max(users, 1))
        return {"users": users, "spawn_rate": spawn_rate}
    return {}

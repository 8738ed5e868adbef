"""The load a test starts with, read as the command line reads it: the number of users, the spawn rate, the
host. One reading for `-u`, `-r` and `-H` and for the dashboard's Start and Edit (squall.web.controls), so
that the page starts nothing the command line refuses, and says why in the same one line.

Policy: a number is its text as typed (the dashboard hands over JSON numbers as their text, so `1e999` is
named as sent), read by Python's int or float; it must be finite (a spawn rate of nan or inf spawns no
user, or all at once) and at least its minimum. A URL must have an allowed scheme and a host, a port
from 0 to 65535 if any, and no whitespace or control characters. A value quoted in a message is cut at 60
characters and its control characters escaped, so that the message stays one line. A leaf but for
squall.errors: the command line and the dashboard's server both import it."""

from __future__ import annotations

import argparse
import math
from typing import Callable, TypeVar
from urllib.parse import urlsplit

from squall.errors import UsageError

Number = TypeVar("Number", int, float)
SHOWN_CHARS = 60
NO_USERS = "-u/--users must be at least 1 (a run of 0 users sends nothing)"  # unless a shape sets them


def shown(text: object) -> str:
    """`text` quoted for a one-line message: at most SHOWN_CHARS characters, control characters escaped."""
    s = str(text)
    if len(s) > SHOWN_CHARS:
        s = s[: SHOWN_CHARS - 3] + "..."
    return "'" + "".join(c if c.isprintable() else repr(c)[1:-1] for c in s) + "'"


def number(text: str, what: str, cast: Callable[[str], Number], minimum: float = 0) -> Number:
    """`text` read by `cast` (int or float), finite and at least `minimum`; else `invalid WHAT 'TEXT'`."""
    try:
        value = cast(text)
    except (TypeError, ValueError, OverflowError):
        raise UsageError(f"invalid {what} {shown(text)}") from None
    if (isinstance(value, float) and not math.isfinite(value)) or value < minimum:
        raise UsageError(f"invalid {what} {shown(text)}")
    return value


def users(text: str) -> int:
    """-u/--users (a config file's `users`, the dashboard's field): a whole number, at least 0."""
    return number(text, "number of users", int)


def spawn_rate(text: str) -> float:
    """-r/--spawn-rate (a config file's `spawn-rate`, the dashboard's field): a number, at least 0.001."""
    return number(text, "spawn rate", float, 0.001)


def url_problem(where: str, url: str, allowed: tuple[str, ...]) -> UsageError | None:
    """Why `url` (named `where`) is not a URL squall can load with one of the `allowed` schemes, or None."""
    schemes = " or ".join(f"{s}://" for s in allowed)

    def problem(why: str) -> UsageError:
        return UsageError(f"{where} {shown(url)} is not a URL squall can load: {why}")

    if any(c.isspace() or not c.isprintable() for c in url):
        return problem("it has whitespace or control characters")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (read for its check)
    except ValueError as e:  # an unclosed [IPv6], a port that is not a number from 0 to 65535
        why = str(e)
        return problem(why[:1].lower() + why[1:80])
    if parts.scheme.lower() not in allowed or not parts.netloc:
        return problem(f"it must start with {schemes}")
    if not parts.hostname:
        return problem("it has no host")
    return None


def whole_within(name: str, low: int, high: int, article: str = "a") -> Callable[[str], int]:
    """An argparse type: a whole number from `low` to `high`, else the parser's one line naming the
    option and what the value must be ("invalid port '70000': a port is 0 to 65535")."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid {name} {shown(text)}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"invalid {name} {shown(text)}: {article} {name} is {low} to {high}")
        return value

    return parse


# A port option's value (--web-port, demo's --port, the master's; 0: any free one): a port past 65535
# was a traceback from bind.
port = whole_within("port", 0, 65535)
# --exit-code-on-error's: what a process can return (the system keeps the low 8 bits: 256 made a run
# with failures exit 0, and -1 255).
exit_code = whole_within("exit code", 0, 255, "an")

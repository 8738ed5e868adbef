"""Failures in Locust's words, for the files and tables Locust's users parse.

Locust keys a failure by its exception's repr (`HTTPError('500 Server Error: Internal Server Error for
url: /x')`, `CatchResponseError('judged bad')`) and writes that in the failures CSV; its console report
unwraps CatchResponseError to the bare message. A scripted run's verdicts are recorded in that form by
the client already (`error_text`); a status failure the engine judged on its own
(`HTTP 500`) is written here as the HTTPError requests would have raised, or, when every HTTP User
class of the run is a FastHttpUser, as geventhttpclient's `LocustBadStatusCode(code=500)` that
Locust's FastHttpUser records (a run mixing both gets requests' text: the engine does not tell which
class made a request). A scripted run's result and live totals carry that text in each error's
`locust` (`annotate`), so the files, the console and the dashboard write the same. Other failures
(timeouts, refused connections) keep squall's words: Locust's would name urllib3's internals. Runs that
are not scripts (bench, mqtt) keep squall's words throughout."""

from __future__ import annotations

import re
from datetime import datetime, timezone
from http import HTTPStatus
from typing import Any

_CATCH = "CatchResponseError("


def error_text(error: BaseException | str) -> str:
    """How Locust writes a failure (its StatsError.parse_error): a string as it is, an exception's repr
    without the memory addresses that would split one error into many."""
    text = error if isinstance(error, str) else repr(error)
    return re.sub(r"object at 0x[0-9a-fA-F]+>", "object at 0x....>", text)


def csv_text(error: dict[str, Any], script: bool, fast: bool = False) -> str:
    """The failures CSV's Error column: the error's `locust` text if it has one, else made here."""
    if script and error.get("locust"):
        return str(error["locust"])
    if script and error.get("kind") == "http" and error.get("status"):
        status = int(error["status"])
        if fast:
            return f"LocustBadStatusCode(code={status})"
        try:
            reason = HTTPStatus(status).phrase
        except ValueError:
            reason = ""
        side = "Client" if status < 500 else "Server"
        return repr(_HTTPError(f"{status} {side} Error: {reason} for url: {error.get('name', '')}"))
    return str(error.get("message", ""))


def fast_http(classes: list[type[Any]]) -> bool:
    """Every HTTP User class of the run words its failures as Locust's FastHttpUser does (its session
    class says whose words it uses, `locust_words`)."""
    words = {getattr(getattr(c, "session_class", None), "locust_words", None) for c in classes} - {None}
    return words == {"fasthttp"}


def annotate(errors: list[dict[str, Any]], fast: bool) -> list[dict[str, Any]]:
    """A scripted run's errors with Locust's text in `locust` (`fast`: every HTTP User class of the run
    is a FastHttpUser); returns them."""
    for e in errors:
        e["locust"] = csv_text(e, True, fast)
    return errors


def console_text(error: dict[str, Any], script: bool) -> str:
    """The console's error report line after `METHOD NAME: ` (Locust's StatsError.to_name)."""
    text = csv_text(error, script)
    if text.startswith(_CATCH) and text.endswith(")"):
        inner = text[len(_CATCH) : -1]
        return inner[1:-1] if len(inner) >= 2 and inner[0] == inner[-1] and inner[0] in "'\"" else inner
    return text


def utc_stamp(unix: float) -> str:
    """Locust's timestamps in the failures CSV (`2026-11-23T04:56:53Z`, whole seconds, UTC)."""
    return datetime.fromtimestamp(int(unix), timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class _HTTPError(Exception):
    """Only for its repr: `HTTPError('...')`, as requests' exception prints."""


_HTTPError.__name__ = _HTTPError.__qualname__ = "HTTPError"

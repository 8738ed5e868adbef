"""The `session` and `fastsession` fixtures of pytest-style locustfiles (squall.pytest_style), as Locust's
own pytest plugin (`pytest_locust.plugin`) defines them: an HttpSession or FastHttpSession for the user
running the test, on its host (`-H`). squall loads it into the pytest collection of such a file; the
test functions then run as users of a squall run."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from squall.clients import HttpSession
from squall.contrib.fasthttp import FastHttpSession

if TYPE_CHECKING:
    from squall.user.users import User


def _for(user: User | None) -> dict[str, Any]:
    if user is None:
        raise pytest.UsageError("squall's session fixtures run inside `squall -f FILE`, as the test's user")
    return {"base_url": user.host, "request_event": user.environment.events.request, "user": user}


@pytest.fixture
def session(user: User | None = None) -> Iterator[HttpSession]:
    s = HttpSession(**_for(user))
    yield s
    s.close()


@pytest.fixture
def fastsession(user: User | None = None) -> Iterator[FastHttpSession]:
    yield FastHttpSession(**_for(user))

"""`locust.contrib.fasthttp`: Locust's FastHttpUser. In squall every HTTP client runs in the engine, so
it is the same user and session as HttpUser's."""

from __future__ import annotations

from squall.clients import HttpSession, ResponseContextManager
from squall.user.users import HttpUser

FastHttpSession = HttpSession


class FastHttpUser(HttpUser):
    """Locust's FastHttpUser: here the same engine-backed client as HttpUser."""

    abstract = True


__all__ = ["FastHttpSession", "FastHttpUser", "ResponseContextManager"]

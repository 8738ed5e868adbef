"""`get` and `post` take a call's common keywords themselves and send it through `_call` (squall.clients);
a session whose `request` is its own (a subclass's, or one a script set on the session) must still get
every call with exactly the keywords the script gave, as requests' verbs pass them on: a `request` that
fills in what a call left out (`kwargs.setdefault("headers", ...)`) must see an explicit `headers=None`
as given and an absent one as absent."""

from squall.clients import HttpSession
from squall.contrib.fasthttp import FastHttpSession


def recorded(cls):
    """A `cls` session whose `request` returns what it was called with (nothing sent)."""

    class Recorded(cls):
        def request(self, method, url, *args, **kw):
            return (method, url, args, kw)

    return object.__new__(Recorded)


def test_a_subclass_request_gets_the_keywords_as_given():
    for cls in (HttpSession, FastHttpSession):
        s = recorded(cls)
        assert s.get("/a") == ("GET", "/a", (), {})
        assert s.get("/a", headers=None) == ("GET", "/a", (), {"headers": None})
        assert s.get("/a", name="n", catch_response=False) == ("GET", "/a", (), {"name": "n", "catch_response": False})
        assert s.get("/a", params={"q": 1}, timeout=3) == ("GET", "/a", (), {"params": {"q": 1}, "timeout": 3})
        # requests' and Locust's post pass data and json on always
        assert s.post("/p", json={"k": 1}) == ("POST", "/p", (), {"data": None, "json": {"k": 1}})
        assert s.post("/p", "body", name="n") == ("POST", "/p", (), {"data": "body", "json": None, "name": "n"})


def test_a_request_set_on_a_session_gets_its_calls():
    for cls in (HttpSession, FastHttpSession):
        s = object.__new__(cls)
        calls = []
        s.request = lambda method, url, calls=calls, **kw: calls.append((method, url, kw))
        s.get("/a", headers=None)
        s.post("/p", json=[1])
        assert calls == [("GET", "/a", {"headers": None}), ("POST", "/p", {"data": None, "json": [1]})]


def test_a_subclass_keeps_its_own_verbs_and_squalls_sessions_keep_theirs():
    class OwnGet(HttpSession):
        def request(self, *a, **kw):
            return "request"

        def get(self, url, **kw):
            return "own get"

    s = object.__new__(OwnGet)
    assert s.get("/") == "own get"
    assert s.post("/") == "request"
    # FastHttpSession's `request` is squall's own: its verbs are HttpSession's, which use `_call`.
    assert FastHttpSession.get is HttpSession.get and FastHttpSession.post is HttpSession.post


def test_a_fast_http_user_is_not_an_http_user_as_in_locust():
    """Locust's FastHttpUser derives from User, not HttpUser: a script (or a listener) that tells its
    users apart with isinstance(user, HttpUser) must find the same in squall (tests/locustfiles/corpus/
    call_headers.py does, against Locust)."""
    from squall.contrib.fasthttp import FastHttpUser
    from squall.user.users import HttpUser, SessionUser, User

    assert not issubclass(FastHttpUser, HttpUser) and not issubclass(HttpUser, FastHttpUser)
    assert issubclass(FastHttpUser, User) and issubclass(HttpUser, User)
    assert issubclass(FastHttpUser, SessionUser) and issubclass(HttpUser, SessionUser)  # squall's own base
    assert hasattr(FastHttpUser, "rest") and hasattr(FastHttpUser, "rest_")

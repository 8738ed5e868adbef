"""HttpSession.__init__ writes its settings at once where that is the same as setting them one by one
(squall.clients._plain_settings): for squall's sessions, not for a subclass that watches them."""

from squall.clients import HttpSession, _plain_settings
from squall.contrib.fasthttp import FastHttpSession

SETTINGS = {"timeout": None, "max_redirects": 30, "headers": {}}


def test_squalls_sessions_take_their_settings_at_once():
    assert _plain_settings(HttpSession, SETTINGS)
    assert _plain_settings(FastHttpSession, SETTINGS)

    class Plain(HttpSession):
        extra = 1

    assert _plain_settings(Plain, SETTINGS)


def test_a_subclass_with_a_property_or_its_own_setattr_is_set_one_by_one():
    class Watched(HttpSession):
        seen = []

        @property
        def timeout(self):
            return 5.0

        @timeout.setter
        def timeout(self, value):
            self.seen.append(value)

    class Noted(HttpSession):
        def __setattr__(self, name, value):
            super().__setattr__(name, value)

    assert not _plain_settings(Watched, SETTINGS)
    assert _plain_settings(Watched, {"max_redirects": 30})  # (per set of names)
    assert not _plain_settings(Noted, SETTINGS)

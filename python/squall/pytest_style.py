"""pytest-style locustfiles (Locust 2.40): test functions that take Locust's `session` (an HttpSession)
or `fastsession` (a FastHttpSession) fixture, each run as a User class of its own, as Locust's
`load_locustfile_pytest` makes them.

Policy, as in Locust: only when no file of `-f` defines a User class are its files collected by pytest
(its `test*` functions, its `conftest.py`, its fixtures); each test function becomes a User class named
after it, whose users call it over and over, without wait (a test sleeps with `time.sleep`, which
waits cooperatively). Its fixtures are generators called with the user, as squall.pytest_plugin's are
(`-p no:locust` keeps Locust's own plugin out, when Locust is installed: the same fixtures twice would
be ambiguous). In the function, requests' exceptions (`raise_for_status()`, ConnectionError) and a
CatchResponseError end that call quietly (Locust logs them at DEBUG) and the next call starts; any other
exception ends that user, printed as gevent prints a failed greenlet, and not counted (as Locust's).
A parameter with no fixture, or with two, is an error while loading (exit 2). pytest is needed for
these files only."""

from __future__ import annotations

import inspect
import logging
import sys
import traceback
from typing import TYPE_CHECKING, ClassVar

from greenlet import GreenletExit

from squall.exception import CatchResponseError, ResponseError, StopUser, UserHung, user_traceback
from squall.user.users import User

if TYPE_CHECKING:
    import pytest

logger = logging.getLogger("locust.user.users")  # where Locust's PytestUser logs what it ignores


class PytestUser(User):
    """A User whose task is pytest test functions, each called with its fixture's value."""

    abstract = True
    functions: ClassVar[list[pytest.Function]] = []

    def run(self) -> None:
        turn = 0
        try:
            try:
                # Each fixture is a generator taking the user (squall.pytest_plugin's, or the file's own).
                fixtures = [next(f.fixturedef.func(self)) for f in self.functions]  # type: ignore[attr-defined]
                while True:
                    for function, fixture in zip(self.functions, fixtures):
                        try:
                            function.obj(fixture)
                        except (ResponseError, ConnectionError) as e:
                            if isinstance(e, ValueError):  # InvalidURL and the like: a bug in the test
                                raise
                            logger.debug("%s\n%s", e, traceback.format_exc())
                        except CatchResponseError as e:
                            logger.debug("%s\n%s", e, traceback.format_exc())
                    turn = self.hub.pause(0.0, turn)  # the others' turn, as after a task with no wait
            except (StopUser, GreenletExit, UserHung):
                raise
            except Exception as e:  # as a gevent greenlet that fails: said, and the user is gone
                sys.stderr.write(user_traceback(e))
                sys.stderr.write(f"<Greenlet {type(self).__name__}> failed with {type(e).__name__}\n\n")
        except (StopUser, GreenletExit):
            pass
        except UserHung as e:
            self.environment.report_exception(self, e, user_traceback(e))
        finally:
            self.environment.user_stopped(self)


def load(path: str) -> dict[str, type[User]]:
    """The User classes of a pytest-style locustfile: one per test function pytest collects in it.
    ValueError for a parameter without exactly one fixture; ImportError without pytest."""
    import pytest  # for start-up, and an optional dependency: only these files need it
    from _pytest.config import Config

    # -q and -s as Locust passes them (no capture: the run owns stdin and stdout); squall's fixtures
    # instead of Locust's plugin; no cache written beside the file.
    args = ["-q", "-s", "-p", "no:locust", "-p", "squall.pytest_plugin", "-p", "no:cacheprovider", path]
    config = Config.fromdictargs({}, args)
    config._do_configure()
    session = pytest.Session.from_config(config)
    config.hook.pytest_sessionstart(session=session)
    session.perform_collect()
    config.hook.pytest_collection_modifyitems(session=session, config=config, items=session.items)
    if session.testsfailed:
        raise ValueError(f"pytest could not collect {path} (run pytest on it to see why)")
    manager = session._fixturemanager
    classes: dict[str, type[User]] = {}
    for function in session.items:
        if not isinstance(function, pytest.Function):
            continue
        for name in inspect.signature(function.obj).parameters:
            found = manager.getfixturedefs(name, function)
            if not found:
                raise ValueError(f"Could not find fixture for parameter {name!r} in {function.name}")
            if len(found) > 1:
                raise ValueError(f"Multiple fixtures found for parameter {name!r} in {function.name}: {found}")
            function.fixturedef = found[0]  # type: ignore[attr-defined]
        cls = classes.get(function.name)
        if cls is None:
            cls = classes[function.name] = type(function.name, (PytestUser,), {"functions": []})
            cls.__module__ = function.module.__name__ if function.module else __name__
        cls.functions.append(function)  # type: ignore[attr-defined]
    return classes

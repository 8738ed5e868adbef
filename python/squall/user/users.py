"""Users, as in Locust (`locust.user.users`): `User` and `HttpUser`. Each user runs in its own greenlet
on the hub."""

from __future__ import annotations

import re
import time
import traceback
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, ClassVar

from greenlet import GreenletExit, getcurrent

from squall.clients import HttpSession, ResponseContextManager
from squall.exception import StopUser, UserHung, user_traceback
from squall.user import native
from squall.user.task import DefaultTaskSet, Task, TaskHolderMeta
from squall.user.wait_time import WaitTime, constant

if TYPE_CHECKING:
    from squall.env import Environment


class User(metaclass=TaskHolderMeta):
    """A simulated user: runs its tasks with waits between them until the test ends."""

    abstract = True
    host: str | None = None
    wait_time: ClassVar[WaitTime] = constant(0)
    tasks: ClassVar[list[Task]] = []  # set per class by TaskHolderMeta
    weight = 1
    fixed_count = 0
    client: Any  # set by the users that have one (HttpUser, MqttUser)
    mqtt_host: ClassVar[bool] = False  # an mqtt:// host (-H) is for the users that say so (MqttUser)
    _stopping = False  # `stop` asked it to end once its task is done (Locust's LOCUST_STATE_STOPPING)
    _waiting = False  # in its wait between tasks (Locust's LOCUST_STATE_WAITING)

    def __init__(self, environment: Environment) -> None:
        if environment.hub is None:
            raise RuntimeError("squall's users run on its hub: the Environment needs one")
        self.environment = environment
        self.hub = environment.hub
        self.user_id = environment.next_user_id()
        # As in Locust, the command line's host (-H, or the config's) wins over the class's for every
        # User, custom clients' too: a file written against production and run with -H staging must load
        # staging. An mqtt:// host is the MQTT users', an http:// one the others'.
        given = environment.host
        if given and given.startswith(("mqtt://", "mqtts://")) == self.mqtt_host:
            self.host = given

    def on_start(self) -> None:
        pass

    def context(self) -> dict[str, Any]:
        """Added to every request event's `context` (Locust's hook for tagging requests per user)."""
        return {}

    context.tags_nothing = True  # type: ignore[attr-defined]  # HttpSession skips calling this one

    def on_stop(self) -> None:
        pass

    def wait(self) -> None:
        self.hub.sleep(self.wait_time())

    def stop(self, force: bool = False) -> bool:
        """Locust's `User.stop`: forced, or while the user waits between tasks, it ends now (GreenletExit in
        its greenlet: its on_stop runs; True); else it ends once its running task is done (False)."""
        if force or self._waiting:
            g = self.environment.runner.users.get(self)
            if g is getcurrent():
                raise GreenletExit
            if g is not None:
                self.hub.kill(g)
            return True
        self._stopping = True
        return False

    def run(self) -> None:
        """The user's whole life, in its greenlet. An exception in on_start is reported and ends the
        user without on_stop, as in Locust."""
        try:
            try:
                self.on_start()
            except (StopUser, GreenletExit):
                raise
            except Exception as e:
                self.environment.report_exception(self, e, user_traceback(e))
                self.environment.users_failed += 1
                return
            if self.environment.open_pool is not None:
                self.environment.open_pool.first_iteration(self)
            plan = native.plan_for(self)
            if plan is not None and native.run(self, plan):
                raise StopUser()  # the test is ending and the plan's last task is done (--stop-timeout)
            DefaultTaskSet(self).run()
        except (StopUser, GreenletExit):
            try:
                self.on_stop()
            except Exception as e:
                self.environment.report_exception(self, e, user_traceback(e))
        except UserHung as e:
            self.environment.report_exception(self, e, user_traceback(e))
            self.environment.users_failed += 1
        except (Exception, SystemExit, KeyboardInterrupt) as e:
            # Outside a task's own handling (a wait_time that raises, a TaskSet's on_stop) or a task's
            # sys.exit() / KeyboardInterrupt: that user's end, counted, never the run's (Locust's process
            # would die with the task's exit code, its statistics unwritten).
            self.environment.report_exception(self, e, user_traceback(e))
            self.environment.users_failed += 1
        finally:
            self.environment.user_stopped(self)


class SessionUser(User):
    """A user with `self.client`, an HTTP session whose I/O runs in the engine: what HttpUser and
    FastHttpUser (squall.contrib.fasthttp) share. Neither is the other, as in Locust: a script that
    tells its users apart with `isinstance(user, HttpUser)` finds a FastHttpUser is not one."""

    abstract = True
    client: HttpSession

    def __init__(self, environment: Environment) -> None:
        super().__init__(environment)
        self.client = self.session_class(self.host, environment.events.request, self)

    session_class: ClassVar[type[HttpSession]] = HttpSession

    @contextmanager
    def rest(
        self, method: str, url: str, headers: Mapping[str, Any] | None = None, **kwargs: Any
    ) -> Iterator[ResponseContextManager]:
        """Locust's `rest`: a JSON request judged in a with-block. The body is parsed into `resp.js`
        (a body that is not JSON fails it); `Content-Type` and `Accept` default to JSON; an assertion or
        any exception in the block fails the request with its message instead of ending the task."""
        with _rest(self, method, url, headers, kwargs) as resp:
            yield resp

    @contextmanager
    def rest_(self, method: str, url: str, name: str | None = None, **kwargs: Any) -> Iterator[ResponseContextManager]:
        """`rest` with a `_=<milliseconds>` query parameter against caches, named `url?_=...`."""
        separator = "&" if "?" in url else "?"
        name = name if name is not None else f"{url}{separator}_=..."
        with self.rest(method, f"{url}{separator}_={int(time.time() * 1000)}", name=name, **kwargs) as resp:
            yield resp


class HttpUser(SessionUser):
    """A user with `self.client`, a requests-like session whose I/O runs in the engine."""

    abstract = True


_CALLSTACK = re.compile(r'  File "(\/.[^"]*)", line (\d*),(.*)')


@contextmanager
def _rest(
    user: SessionUser, method: str, url: str, headers: Mapping[str, Any] | None, kwargs: dict[str, Any]
) -> Iterator[ResponseContextManager]:
    sent = dict(headers) if headers else {}
    if not ("Content-Type" in sent or "content-type" in sent):
        sent["Content-Type"] = "application/json"
    if not ("Accept" in sent or "accept" in sent):
        sent["Accept"] = "application/json"
    with user.client.request(method, url, catch_response=True, headers=sent, **kwargs) as r:
        assert isinstance(r, ResponseContextManager)  # catch_response=True
        r.js = None
        if r.error is not None and not r.status_code:  # no response (Locust: its content None)
            r.failure(str(r.error))
        elif r.text:
            try:
                r.js = r.json()
            except ValueError as e:
                r.failure(f"Could not parse response as JSON. {r.text[:250]}, response code {r.status_code}, error {e}")
        try:
            yield r
        except AssertionError as e:
            if e.args:
                message = str(e.args[0])
                short = r.text[:200] if r.text else r.text
                r.failure(f"{message[:-1]}, response was {short}" if message.endswith(",") else message)
            else:
                r.failure("Assertion failed")
        except Exception as e:  # as Locust: the request fails with the error and where it happened
            lines = []
            for line in traceback.format_exc().split("\n"):
                if m := _CALLSTACK.match(line):
                    filename = re.sub(r"/((home|Users)/\w*)/", "~/", m.group(1))
                    lines.append(filename + ":" + m.group(2) + m.group(3))
            short = r.text[:200] if r.text else r.text
            r.failure(f"{e.__class__.__name__}: {e} at {', '.join(lines)}. Response was {short}")

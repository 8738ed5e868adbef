"""Users, as in Locust (`locust.user.users`): `User` and `HttpUser`. Each user runs in its own greenlet
on the hub."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from greenlet import GreenletExit

from squall.clients import HttpSession
from squall.exception import StopUser, UserHung, user_traceback
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

    def __init__(self, environment: Environment) -> None:
        if environment.hub is None:
            raise RuntimeError("squall's users run on its hub: the Environment needs one")
        self.environment = environment
        self.hub = environment.hub
        self.user_id = environment.next_user_id()

    def on_start(self) -> None:
        pass

    def on_stop(self) -> None:
        pass

    def wait(self) -> None:
        self.hub.sleep(self.wait_time())

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
                return
            if self.environment.open_pool is not None:
                self.environment.open_pool.first_iteration(self)
            DefaultTaskSet(self).run()
        except (StopUser, GreenletExit):
            try:
                self.on_stop()
            except Exception as e:
                self.environment.report_exception(self, e, user_traceback(e))
        except UserHung as e:
            self.environment.report_exception(self, e, user_traceback(e))
        finally:
            self.environment.user_stopped(self)


class HttpUser(User):
    """A user with `self.client`, a requests-like session whose I/O runs in the engine."""

    abstract = True
    client: HttpSession

    def __init__(self, environment: Environment) -> None:
        super().__init__(environment)
        # As in Locust, the command line's host (-H, or the config's) wins over the class's: a file written
        # against production and run with -H staging must load staging. An mqtt:// host is the MQTT users'.
        given = environment.host
        if given and not given.startswith(("mqtt://", "mqtts://")):
            self.host = given
        self.client = HttpSession(self.host, self.user_id, self.hub, environment)

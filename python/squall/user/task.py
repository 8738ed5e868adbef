"""Tasks, as in Locust (`locust.user.task`): `@task`, `@tag`, `TaskSet`, `SequentialTaskSet`, and the
`DefaultTaskSet` that runs a User's own tasks."""

from __future__ import annotations

import random
from collections.abc import Sequence
from types import FunctionType
from typing import TYPE_CHECKING, Any, Callable, ClassVar, NoReturn, TypeVar, overload

from greenlet import GreenletExit

from squall.exception import (
    InterruptTaskSet,
    MissingWaitTimeError,
    RescheduleTask,
    RescheduleTaskImmediately,
    StopUser,
    user_traceback,
)

if TYPE_CHECKING:
    from typing import TypeGuard  # Python 3.10+, so here only: annotations are not evaluated

    from squall.env import Environment
    from squall.user.users import User
    from squall.user.wait_time import WaitTime

# A task: a function or method (called with the User or TaskSet when not bound), or a TaskSet class.
Task = Callable[..., Any]
Marked = TypeVar("Marked", bound=Callable[..., Any])


def _is_task_set(t: Task) -> TypeGuard[type[TaskSet]]:
    return isinstance(t, type) and issubclass(t, TaskSet)


@overload
def task(weight: Marked) -> Marked: ...
@overload
def task(weight: int = 1) -> Callable[[Marked], Marked]: ...


def task(weight: Marked | int = 1) -> Marked | Callable[[Marked], Marked]:
    """`@task` or `@task(3)`: marks a method as a task, picked with probability proportional to weight."""
    if callable(weight):  # used bare: @task
        weight.locust_task_weight = 1  # type: ignore[attr-defined]  # functions and classes take attributes
        return weight

    def mark(func: Marked) -> Marked:
        func.locust_task_weight = weight  # type: ignore[attr-defined]
        return func

    return mark


def tag(*tags: str) -> Callable[[Marked], Marked]:
    """`@tag("a", "b")`: tasks (or TaskSets) selected with -T/--tags and dropped with -E/--exclude-tags."""

    def mark(obj: Marked) -> Marked:
        obj.locust_tag_set = getattr(obj, "locust_tag_set", set()) | set(tags)  # type: ignore[attr-defined]
        return obj

    return mark


def _collect_tasks(cls: type) -> list[Task]:
    """The weighted task list of a class, as Locust builds it: the bases' lists (already weighted),
    then its own `tasks` (a list of tasks or (task, count) pairs, or a dict of weights), then its
    @task methods, each repeated by its weight."""
    collected: list[Task] = []
    for base in cls.__bases__:
        collected.extend(getattr(base, "tasks", None) or [])
    declared = cls.__dict__.get("tasks")
    if declared is not None:
        for entry in declared.items() if isinstance(declared, dict) else declared:
            t, count = entry if isinstance(entry, tuple) else (entry, 1)
            collected.extend([t] * count)
    for value in cls.__dict__.values():
        weight = getattr(value, "locust_task_weight", None)
        if weight is not None:
            collected.extend([value] * weight)
    return collected


_getrandbits = random.getrandbits  # (the module's generator: random.seed reseeds it in place)


def _choice(tasks: Sequence[Task]) -> Task:
    """random.choice(tasks) (not empty), written out: the same draws from the same generator (random's
    `_randbelow`: getrandbits of the length's bit length until one falls below it), so a file that
    seeds random picks the tasks Locust picks; without random.choice's two frames (0.30 -> 0.17 µs)."""
    n = len(tasks)
    k = n.bit_length()
    r = _getrandbits(k)
    while r >= n:
        r = _getrandbits(k)
    return tasks[r]


class TaskHolderMeta(type):
    """The metaclass of Users and TaskSets: collects their weighted task lists at class creation."""

    abstract: bool
    tasks: list[Task]

    def __new__(mcs, name: str, bases: tuple[type, ...], ns: dict[str, Any]) -> TaskHolderMeta:
        cls = super().__new__(mcs, name, bases, ns)
        if "abstract" not in ns:
            cls.abstract = False
        cls.tasks = _collect_tasks(cls)
        return cls


def filter_tasks_by_tags(
    holder: TaskHolderMeta,
    include: Sequence[str] | None = None,
    exclude: Sequence[str] | None = None,
    _seen: set[TaskHolderMeta] | None = None,
    emptied: list[str] | None = None,
) -> None:
    """Keeps the tasks whose tags match -T and none of -E; recurses into TaskSets, and drops those left
    without tasks (with no tags given too, as Locust filters before every run). In place, per class.
    `emptied` gets the name of each holder left without tasks, for Locust's warning: such a User class
    still runs, and each of its users' turns is an error (a MarkovTaskSet, whose chain is its tasks, and
    a pytest-style user, whose test functions are, never are)."""
    _seen = _seen if _seen is not None else set()
    if holder in _seen:
        return
    _seen.add(holder)
    kept: list[Task] = []
    for t in holder.tasks:
        tags: set[str] = getattr(t, "locust_tag_set", set())
        if _is_task_set(t):
            inherited = tags
            if include and inherited & set(include):
                filter_tasks_by_tags(t, None, exclude, _seen, emptied)
            else:
                filter_tasks_by_tags(t, include, exclude, _seen, emptied)
            # A MarkovTaskSet has no `tasks` (its chain is its tasks): kept, as in Locust.
            markov = type(t).__name__ == "MarkovTaskSetMeta"
            if (t.tasks or markov) and not (exclude and inherited & set(exclude)):
                kept.append(t)
            continue
        if include and not tags & set(include):
            continue
        if exclude and tags & set(exclude):
            continue
        kept.append(t)
    holder.tasks = kept
    taskless = not kept and type(holder).__name__ != "MarkovTaskSetMeta" and not getattr(holder, "functions", None)
    if taskless and emptied is not None:
        emptied.append(holder.__name__)


def _has_task(holder: Any) -> bool:
    """A `task` attribute that is not the decorator: Locust's hint at a misspelt `tasks`."""
    value = getattr(holder, "task", None)
    return bool(value) and value is not task


class TaskSet(metaclass=TaskHolderMeta):
    """A group of tasks a user runs until it calls `self.interrupt()`; can nest."""

    abstract = True
    tasks: ClassVar[list[Task]] = []  # set per class by TaskHolderMeta
    wait_time: ClassVar[WaitTime | None] = None  # None: the user's

    def __init__(self, parent: User | TaskSet) -> None:
        self.parent = parent
        self.user: User = parent.user if isinstance(parent, TaskSet) else parent
        self._task_queue: list[Task] = []
        self._turn = 0  # the hub's turn count at the last wait (Hub.pause)

    @property
    def client(self) -> Any:
        """The user's client (an HttpSession, an MqttClient, ...)."""
        return self.user.client

    @property
    def environment(self) -> Environment:
        return self.user.environment

    def on_start(self) -> None:
        pass

    def on_stop(self) -> None:
        pass

    def interrupt(self, reschedule: bool = True) -> NoReturn:
        raise InterruptTaskSet(reschedule)

    def schedule_task(self, task_callable: Task, first: bool = False) -> None:
        if first:
            self._task_queue.insert(0, task_callable)
        else:
            self._task_queue.append(task_callable)

    def get_next_task(self) -> Task:
        if not self.tasks:
            hint = ", but you have set a 'task' attribute - maybe you meant to set 'tasks'?" if _has_task(self) else "."
            raise Exception(
                f"No tasks defined on {type(self).__name__}{hint} use the @task decorator or set the 'tasks' "
                "attribute of the TaskSet"
            )
        return _choice(self.tasks)

    def wait_time_value(self) -> float:
        owner = self if type(self).wait_time is not None else self.user
        if owner.wait_time is None:
            raise MissingWaitTimeError(f"{type(owner).__name__} has no wait_time")
        return owner.wait_time()

    def wait(self) -> None:
        pool = self.user.environment.open_pool
        if pool is not None:  # the open model: the next task starts with the next arrival
            pool.next_iteration(self.user)
            return
        user = self.user
        if user._stopping or user.environment.runner.stopping:
            raise StopUser()  # the test (or User.stop) is ending it: the task is done, so stop here
        user._waiting = True  # (User.stop ends it at once meanwhile)
        try:
            self._turn = user.hub.pause(self.wait_time_value(), self._turn)
        finally:
            user._waiting = False

    def execute_task(self, t: Task) -> None:
        if type(t) is FunctionType:  # an `@task` method, collected unbound: the common case, asked first
            t(self)
        elif _is_task_set(t):
            t(self).run()
        elif hasattr(t, "__self__"):
            t()
        else:
            t(self)

    def run(self) -> None:
        try:
            self.on_start()
        except InterruptTaskSet as e:
            if e.reschedule:
                raise RescheduleTaskImmediately from e
            raise RescheduleTask from e
        # Locust picks a task by scheduling it and taking it back from the queue; with schedule_task not
        # overridden that is the task picked, and one call and two list operations fewer per task.
        plain = type(self).schedule_task is TaskSet.schedule_task
        user, queue = self.user, self._task_queue
        # The wait is inside the outer try, as in Locust: a user stopped while it waits between tasks (the
        # run's end, --stop-timeout, User.stop) runs this TaskSet's on_stop too. (A try costs nothing
        # until something is raised: no frame, no allocation a task.)
        while True:
            try:
                try:
                    if queue:
                        self.execute_task(queue.pop(0))
                    elif plain:
                        self.execute_task(self.get_next_task())
                    else:
                        self.schedule_task(self.get_next_task())
                        self.execute_task(queue.pop(0))
                except RescheduleTask:
                    pass
                except RescheduleTaskImmediately:
                    continue
                except (InterruptTaskSet, StopUser):
                    raise
                except Exception as e:  # user_error's user_instance is this TaskSet, as in Locust
                    user.environment.report_exception(self, e, user_traceback(e))
                self.wait()
            except InterruptTaskSet as e:
                self.on_stop()
                if e.reschedule:
                    raise RescheduleTaskImmediately from e
                raise RescheduleTask from e
            except (StopUser, GreenletExit):
                self.on_stop()
                raise


class SequentialTaskSet(TaskSet):
    """Runs its tasks in the order they are declared, over and over."""

    abstract = True

    def __init__(self, parent: User | TaskSet) -> None:
        super().__init__(parent)
        self._position = 0

    def get_next_task(self) -> Task:
        if not self.tasks:
            return TaskSet.get_next_task(self)  # Locust's error
        t = self.tasks[self._position % len(self.tasks)]
        self._position += 1
        return t


class DefaultTaskSet(TaskSet):
    """Runs a User's own tasks; task functions get the user as their argument."""

    abstract = True

    def get_next_task(self) -> Task:
        tasks = self.user.tasks
        if len(tasks) == 1:
            return tasks[0]
        if not tasks:  # Locust starts such a user, and each of its turns is this error in the exceptions
            user = self.user
            hint = ", but you have set a 'task' attribute on your class - maybe you meant to set 'tasks'?"
            raise Exception(
                f"No tasks defined on {type(user).__name__}{hint if _has_task(user) else '.'} Use the @task "
                "decorator or set the 'tasks' attribute of the User (or mark it as abstract = True if you only "
                "intend to subclass it)"
            )
        return _choice(tasks)

    def execute_task(self, t: Task) -> None:
        if type(t) is FunctionType:  # an `@task` method, collected unbound: the common case, asked first
            t(self.user)
        elif _is_task_set(t):
            t(self.user).run()
        elif hasattr(t, "__self__"):
            t()
        else:
            t(self.user)

    def wait_time_value(self) -> float:
        if self.user.wait_time is None:
            raise MissingWaitTimeError(f"{type(self.user).__name__} has no wait_time")
        return self.user.wait_time()

    def wait(self) -> None:
        """TaskSet.wait with the user's wait_time asked for here (`wait_time_value` written out: a frame
        less a task); anything else (the open model, a stopping user, no wait_time) as TaskSet's."""
        user = self.user
        environment = user.environment
        wait_time = user.wait_time
        if environment.open_pool is not None or user._stopping or environment.runner.stopping or wait_time is None:
            TaskSet.wait(self)
            return
        user._waiting = True  # (User.stop ends it at once meanwhile)
        try:
            self._turn = user.hub.pause(wait_time(), self._turn)
        finally:
            user._waiting = False

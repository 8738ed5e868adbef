"""Tasks, as in Locust (`locust.user.task`): `@task`, `@tag`, `TaskSet`, `SequentialTaskSet`, and the
`DefaultTaskSet` that runs a User's own tasks."""

import random
from typing import Any, ClassVar

from greenlet import GreenletExit

from squall.exception import (
    InterruptTaskSet,
    MissingWaitTimeError,
    RescheduleTask,
    RescheduleTaskImmediately,
    StopUser,
    user_traceback,
)


def task(weight=1):
    """`@task` or `@task(3)`: marks a method as a task, picked with probability proportional to weight."""
    if callable(weight):  # used bare: @task
        weight.locust_task_weight = 1
        return weight

    def mark(func):
        func.locust_task_weight = weight
        return func

    return mark


def tag(*tags):
    """`@tag("a", "b")`: tasks (or TaskSets) selected with -T/--tags and dropped with -E/--exclude-tags."""

    def mark(obj):
        obj.locust_tag_set = getattr(obj, "locust_tag_set", set()) | set(tags)
        return obj

    return mark


def _collect_tasks(cls):
    """The weighted task list of a class, as Locust builds it: the bases' lists (already weighted),
    then its own `tasks` (a list of tasks or (task, count) pairs, or a dict of weights), then its
    @task methods, each repeated by its weight."""
    collected = []
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


class TaskHolderMeta(type):
    """The metaclass of Users and TaskSets: collects their weighted task lists at class creation."""

    def __new__(mcs, name, bases, ns):
        cls = super().__new__(mcs, name, bases, ns)
        if "abstract" not in ns:
            cls.abstract = False
        cls.tasks = _collect_tasks(cls)
        return cls


def filter_tasks_by_tags(holder, include=None, exclude=None, _seen=None):
    """Keeps the tasks whose tags match -T and none of -E; recurses into TaskSets. In place, per class."""
    _seen = _seen if _seen is not None else set()
    if holder in _seen:
        return
    _seen.add(holder)
    kept = []
    for t in holder.tasks:
        tags = getattr(t, "locust_tag_set", set())
        if isinstance(t, type) and issubclass(t, TaskSet):
            inherited = tags
            if include and inherited & set(include):
                filter_tasks_by_tags(t, None, exclude, _seen)
            else:
                filter_tasks_by_tags(t, include, exclude, _seen)
            if t.tasks and not (exclude and inherited & set(exclude)):
                kept.append(t)
            continue
        if include and not tags & set(include):
            continue
        if exclude and tags & set(exclude):
            continue
        kept.append(t)
    holder.tasks = kept


class TaskSet(metaclass=TaskHolderMeta):
    """A group of tasks a user runs until it calls `self.interrupt()`; can nest."""

    abstract = True
    tasks: ClassVar[list[Any]] = []  # set per class by TaskHolderMeta
    wait_time = None

    def __init__(self, parent):
        self.parent = parent
        self.user = parent.user if isinstance(parent, TaskSet) else parent
        self._task_queue = []

    @property
    def client(self):
        return self.user.client

    @property
    def environment(self):
        return self.user.environment

    def on_start(self):
        pass

    def on_stop(self):
        pass

    def interrupt(self, reschedule=True):
        raise InterruptTaskSet(reschedule)

    def schedule_task(self, task_callable, first=False):
        if first:
            self._task_queue.insert(0, task_callable)
        else:
            self._task_queue.append(task_callable)

    def get_next_task(self):
        if not self.tasks:
            raise Exception(f"no tasks defined on {type(self).__name__}: use @task or set `tasks`")
        return random.choice(self.tasks)

    def wait_time_value(self):
        owner = self if type(self).wait_time is not None else self.user
        if owner.wait_time is None:
            raise MissingWaitTimeError(f"{type(owner).__name__} has no wait_time")
        return owner.wait_time()

    def wait(self):
        if self.user.environment.runner.stopping:
            raise StopUser()  # the test is ending: the task is done, so stop here (--stop-timeout)
        self.user.hub.sleep(self.wait_time_value())

    def execute_task(self, t):
        if isinstance(t, type) and issubclass(t, TaskSet):
            t(self).run()
        elif hasattr(t, "__self__"):
            t()
        else:
            t(self)

    def run(self):
        try:
            self.on_start()
        except InterruptTaskSet as e:
            if e.reschedule:
                raise RescheduleTaskImmediately from e
            raise RescheduleTask from e
        while True:
            try:
                if not self._task_queue:
                    self.schedule_task(self.get_next_task())
                self.execute_task(self._task_queue.pop(0))
            except RescheduleTask:
                pass
            except RescheduleTaskImmediately:
                continue
            except InterruptTaskSet as e:
                self.on_stop()
                if e.reschedule:
                    raise RescheduleTaskImmediately from e
                raise RescheduleTask from e
            except (StopUser, GreenletExit):
                self.on_stop()
                raise
            except Exception as e:
                self.user.environment.report_exception(self.user, e, user_traceback(e))
            self.wait()


class SequentialTaskSet(TaskSet):
    """Runs its tasks in the order they are declared, over and over."""

    abstract = True

    def __init__(self, parent):
        super().__init__(parent)
        self._position = 0

    def get_next_task(self):
        if not self.tasks:
            raise Exception(f"no tasks defined on {type(self).__name__}")
        t = self.tasks[self._position % len(self.tasks)]
        self._position += 1
        return t


class DefaultTaskSet(TaskSet):
    """Runs a User's own tasks; task functions get the user as their argument."""

    abstract = True

    def get_next_task(self):
        tasks = self.user.tasks
        if len(tasks) == 1:
            return tasks[0]
        if not tasks:
            raise Exception(f"no tasks defined on {type(self.user).__name__}: use @task or set `tasks`")
        return random.choice(tasks)

    def execute_task(self, t):
        if isinstance(t, type) and issubclass(t, TaskSet):
            t(self.user).run()
        elif hasattr(t, "__self__"):
            t()
        else:
            t(self.user)

    def wait_time_value(self):
        if self.user.wait_time is None:
            raise MissingWaitTimeError(f"{type(self.user).__name__} has no wait_time")
        return self.user.wait_time()

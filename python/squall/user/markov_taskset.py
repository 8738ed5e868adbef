"""`MarkovTaskSet` with `@transition` / `@transitions` (Locust 2.38's `locust.user.markov_taskset`): a
TaskSet whose next task is drawn from the transitions of the one that just ran, with their weights,
starting from the first task declared.

As in Locust: the chain is checked when the class is made (at least one task, every transition to a
task of the class that has transitions of its own, no tags, no task named `run`), so a broken chain is
an error while the locustfile loads (exit 2, its file and line); an unreachable task is a warning;
`abstract = True` skips the checks (a base class to subclass)."""

from __future__ import annotations

import logging
import random
from typing import Any, Callable

from squall.exception import LocustError
from squall.user.task import TaskHolderMeta, TaskSet

MarkovTask = Callable[..., Any]


class NoMarkovTasksError(LocustError):
    """A MarkovTaskSet defines no task with transitions."""


class InvalidTransitionError(LocustError):
    """A transition names no member of the class."""


class NonMarkovTaskTransitionError(LocustError):
    """A transition names a member that has no transitions of its own."""


class MarkovTaskTagError(LocustError):
    """A Markov task has tags (they could break the chain)."""


def is_markov_task(task: Any) -> bool:
    return "transitions" in dir(task)


def is_markov_taskset(task: Any) -> bool:
    return type(task).__name__ == "MarkovTaskSetMeta"


def transition(func_name: str, weight: int = 1) -> Callable[[MarkovTask], MarkovTask]:
    """`@transition("next_task", weight=2)`: after this task, `next_task` with this weight (stackable)."""

    def mark(decorated: MarkovTask) -> MarkovTask:
        if not hasattr(decorated, "transitions"):
            decorated.transitions = {}  # type: ignore[attr-defined]  # functions take attributes
        decorated.transitions[func_name] = weight  # type: ignore[attr-defined]
        return decorated

    return mark


def transitions(weights: dict[str, int] | list[tuple[str, int] | str]) -> Callable[[MarkovTask], MarkovTask]:
    """`@transitions({"a": 3, "b": 1})` or `@transitions(["a", ("b", 2)])`: several at once (weight 1 when
    only a name is given)."""

    def pair(item: tuple[str, int] | str) -> tuple[str, int]:
        return item if isinstance(item, tuple) else (item, 1)

    def mark(decorated: MarkovTask) -> MarkovTask:
        if not hasattr(decorated, "transitions"):
            decorated.transitions = {}  # type: ignore[attr-defined]
        decorated.transitions.update(  # type: ignore[attr-defined]
            weights if isinstance(weights, dict) else dict(map(pair, weights))
        )
        return decorated

    return mark


def _weighted(chances: dict[str, int]) -> list[str]:
    return [name for name, weight in chances.items() for _ in range(weight)]


def _validate(tasks: list[MarkovTask], ns: dict[str, Any], classname: str) -> None:
    """Locust's checks of a chain, with its messages."""
    if not tasks:
        raise NoMarkovTasksError(
            f"No Markov tasks defined in class {classname}. Use the @transition(s) decorators to define some."
        )
    for t in tasks:
        for dest in t.transitions:  # type: ignore[attr-defined]
            target = ns.get(dest)
            if not target:
                raise InvalidTransitionError(
                    f"Transition to {dest} from {t.__name__} is invalid since no such element exists on class "
                    f"{classname}"
                )
            if not is_markov_task(target):
                raise NonMarkovTaskTransitionError(
                    f"{classname}.{dest} cannot be used as a target for a transition since it does not define any "
                    f"transitions of its own.Used as a transition from {t.__name__}."
                )
    seen: set[str] = set()
    frontier = [tasks[0].__name__]
    while frontier:
        name = frontier.pop()
        if name in seen:
            continue
        seen.add(name)
        frontier.extend(set(_weighted(ns[name].transitions)) - seen)
    unreachable = {t.__name__ for t in tasks} - seen
    if unreachable:
        logging.warning(f"The following markov tasks are unreachable in class {classname}: {unreachable}")
    for t in tasks:
        if t.__name__ in ("on_stop", "on_start"):
            logging.warning(
                "You have tagged your on_stop/start function with @transition. This will make the method get "
                "called both as a step AND on stop/start."
            )
        if t.__name__ == "run":
            raise Exception(
                "TaskSet.run() is a method used internally by Locust, and you must not override it or annotate it "
                "with transitions"
            )
        if "locust_tag_set" in dir(t):
            raise MarkovTaskTagError(
                "Tags are unsupported for MarkovTaskSet since they can make the markov chain invalid. "
                f"Tags detected on {classname}.{t.__name__}: {t.locust_tag_set}"  # type: ignore[attr-defined]
            )


class MarkovTaskSetMeta(TaskHolderMeta):
    """Checks the chain of a (non-abstract) MarkovTaskSet and starts it at its first task."""

    def __new__(mcs, name: str, bases: tuple[type, ...], ns: dict[str, Any]) -> MarkovTaskSetMeta:
        if not ns.get("abstract"):
            ns["abstract"] = False
            found = [v for v in ns.values() if is_markov_task(v)]
            _validate(found, ns, name)
            ns["current"] = found[0]
            for t in found:
                t.transitions = _weighted(t.transitions)
        cls = super().__new__(mcs, name, bases, ns)
        cls.tasks = []  # its tasks are the chain's, not @task's (as Locust's, which collects none)
        return cls  # type: ignore[return-value]  # TaskHolderMeta.__new__ made it with this metaclass


class MarkovTaskSet(TaskSet, metaclass=MarkovTaskSetMeta):
    """A TaskSet that walks a Markov chain: each task is followed by one of its transitions, drawn by
    weight."""

    abstract = True
    current: Any  # the task to run next (the first task declared, then as the transitions draw)

    def get_next_task(self) -> Any:
        task = self.current
        self.current = getattr(self, random.choice(task.transitions))
        return task


__all__ = [
    "InvalidTransitionError",
    "MarkovTaskSet",
    "MarkovTaskTagError",
    "NoMarkovTasksError",
    "NonMarkovTaskTransitionError",
    "transition",
    "transitions",
]

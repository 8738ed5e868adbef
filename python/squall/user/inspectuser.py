"""`--show-task-ratio` and `--show-task-ratio-json`: how often each User class and each task runs, as
Locust's `locust.user.inspectuser` computes and prints it (the same numbers, layout and JSON), so that
squall's output of a locustfile can be compared with Locust's line for line.

Policy: the users of each class are Locust's distribution of `-u` (fixed counts first, the rest by
weight, rounded); a task's share is how often it appears in its holder's `tasks` (a weight is
repetition), nested TaskSets dividing their parent's share."""

from __future__ import annotations

import inspect
import json
from collections import defaultdict
from typing import Any

from squall.user.task import TaskSet
from squall.user.users import User

Ratios = dict[str, dict[str, Any]]


def _distribution(user_classes: list[type[User]], num_users: int | None) -> dict[str, int]:
    fixed_count = sum(u.fixed_count for u in user_classes if u.fixed_count)
    total_weight = sum(u.weight for u in user_classes if not u.fixed_count)
    num_users = num_users or (total_weight if not fixed_count else 1)
    weighted_count = max(0, num_users - fixed_count)
    return {u.__name__: round(u.fixed_count or (u.weight / total_weight) * weighted_count) for u in user_classes}


def _task_ratio(tasks: list[Any], total: bool, parent_ratio: float) -> Ratios:
    parent_ratio = parent_ratio if total else 1.0
    counts: dict[Any, int] = defaultdict(int)
    for t in tasks:
        counts[t] += 1
    out: Ratios = {}
    for t, n in counts.items():
        r = n * parent_ratio / len(tasks)
        d: dict[str, Any] = {"ratio": r}
        if inspect.isclass(t) and issubclass(t, TaskSet):
            d["tasks"] = _task_ratio(t.tasks, total, r)
        out[t.__name__] = d
    return out


def get_ratio(user_classes: list[type[User]], spawned: dict[str, int], total: bool) -> Ratios:
    user_count = sum(spawned.values()) or 1
    return {
        u.__name__: {"ratio": (r := spawned.get(u.__name__, 0) / user_count), "tasks": _task_ratio(u.tasks, total, r)}
        for u in user_classes
    }


def _lines(ratios: Ratios, level: int = 0) -> list[str]:
    padding = 2 * " " * level
    out = []
    for name, v in ratios.items():
        ratio = v.get("ratio", 1)
        percent = f"{ratio * 100:<6.1f}"
        out.append(f" {padding + percent:<10} {padding + name:<50}")
        if "tasks" in v:
            out.extend(_lines(v["tasks"], level + 1))
    return out


def task_ratio_text(user_classes: list[type[User]], num_users: int | None) -> str:
    """What `locust --show-task-ratio` prints."""
    spawned = _distribution(user_classes, num_users)
    lines = ["", " Task ratio per User class", "-" * 80, *_lines(get_ratio(user_classes, spawned, False))]
    lines += ["", " Total task ratio", "-" * 80, *_lines(get_ratio(user_classes, spawned, True))]
    return "\n".join(lines) + "\n"


def task_ratio_json(user_classes: list[type[User]], num_users: int | None) -> str:
    """What `locust --show-task-ratio-json` prints."""
    spawned = _distribution(user_classes, num_users)
    data = {"per_class": get_ratio(user_classes, spawned, False), "total": get_ratio(user_classes, spawned, True)}
    return json.dumps(data, indent=4) + "\n"

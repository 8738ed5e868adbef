"""gevent's plugins, found without importlib.metadata: the entry points of the `gevent.plugins.*` groups
that gevent's `patch_all` calls before and after each module it patches.

gevent asks `importlib.metadata.entry_points(group=...)` for them 25 times in a `patch_all`. Importing
importlib.metadata (its email parser with it) cost 21 ms here, reading the 113 distributions of this
project's environment 7 ms more, and the 25 selections 5: 0.034 CPU-s, 12% of `squall -f`'s start-up
until the locustfile is loaded (alternated runs, `python -c` with gevent's lookup replaced by nothing).
This reads the same files the way importlib.metadata finds them, for the one case it can do as well:
every entry of `sys.path` a plain directory (no zip, no egg) and no import finder of another kind that
lists distributions; then only the `entry_points.txt` files that name a gevent group are parsed.
Anything else (`read` returns None) and `found` asks importlib.metadata, once.

Found as importlib.metadata finds them: in `sys.path` order, each directory's `*.dist-info` and
`*.egg-info` folders, a distribution seen twice (by its normalized name) counted where it is first.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import os
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from functools import reduce
from typing import Any, Callable

GROUPS = "gevent.plugins."  # the groups' common prefix
# importlib.metadata.EntryPoint's pattern: `module[.sub]:attr[.attr] [extras]`.
_VALUE = re.compile(r"(?P<module>[\w.]+)\s*(:\s*(?P<attr>[\w.]+)\s*)?((?P<extras>\[.*\])\s*)?$")


@dataclass(frozen=True)
class EntryPoint:
    """What gevent uses of importlib.metadata's EntryPoint: `load()`."""

    name: str
    value: str
    group: str

    def load(self) -> Any:
        match = _VALUE.match(self.value)
        if match is None:
            raise ValueError(f"entry point {self.name} = {self.value!r} is not `module:attribute`")
        module = importlib.import_module(match.group("module"))
        return reduce(getattr, filter(None, (match.group("attr") or "").split(".")), module)


def found() -> Callable[[str], Iterable[Any]]:
    """The plugins of a gevent group, by its name, from one reading of the installed distributions:
    `read`'s where it can tell, else importlib.metadata's entry points read once and selected by
    group."""
    fast = read()
    if fast is not None:
        return lambda group: fast.get(group, ())
    from importlib import metadata

    everything: Any = metadata.entry_points()
    if not hasattr(everything, "select"):  # Python 3.9: a dict of groups
        return lambda group: everything.get(group, ())
    return lambda group: everything.select(group=group)


def read() -> dict[str, list[EntryPoint]] | None:
    """The installed `gevent.plugins.*` entry points by group, or None when this cannot tell as well as
    importlib.metadata (see the module's doc)."""
    finders = [f for f in sys.meta_path if getattr(f, "find_distributions", None) is not None]
    if finders != [importlib.machinery.PathFinder]:
        return None
    found: dict[str, list[EntryPoint]] = {}
    seen: set[str] = set()
    for entry in sys.path:
        root = entry or "."
        if os.path.basename(root).lower().endswith(".egg"):
            return None
        try:
            children = os.listdir(root)
        except NotADirectoryError:
            return None  # a zip: importlib.metadata reads inside it
        except OSError:
            continue  # gone, or not readable: importlib.metadata finds nothing there either
        for child in children:
            low = child.lower()
            if not low.endswith((".dist-info", ".egg-info")):
                continue
            name = normalize(child.rpartition(".")[0].partition("-")[0])
            if name in seen:
                continue
            seen.add(name)
            try:
                with open(os.path.join(root, child, "entry_points.txt"), encoding="utf-8") as f:
                    text = f.read()
            except (OSError, UnicodeDecodeError):
                continue
            if GROUPS in text:
                for point in parse(text):
                    if point.group.startswith(GROUPS):
                        found.setdefault(point.group, []).append(point)
    return found


def normalize(name: str) -> str:
    """importlib.metadata's normalized distribution name (PEP 503, dashes as underscores)."""
    return re.sub(r"[-_.]+", "-", name).lower().replace("-", "_")


def parse(text: str) -> list[EntryPoint]:
    """An entry_points.txt, as importlib.metadata reads one: `[group]` sections of `name = value` lines,
    blank lines and `#` comments skipped."""
    points = []
    group = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            group = line.strip("[]")
            continue
        name, sep, value = line.partition("=")
        if group is not None and sep:
            points.append(EntryPoint(name.strip(), value.strip(), group))
    return points

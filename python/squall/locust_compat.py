"""While squall runs a locustfile, `import locust` (and its usual submodules) resolve to squall's
own compatible API, whether or not Locust is installed. squall's package tree mirrors Locust's, so
this is a table of aliases: each Locust module name and the squall module that stands for it."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from pathlib import Path
from types import ModuleType

import squall
import squall.argument_parser
import squall.clients
import squall.contrib
import squall.contrib.fasthttp
import squall.contrib.mqtt
import squall.debug
import squall.env
import squall.event
import squall.exception
import squall.gevent_compat
import squall.runners
import squall.runtime.gevent_hub
import squall.shape
import squall.stats
import squall.user
import squall.user.markov_taskset
import squall.user.task
import squall.user.users
import squall.user.wait_time

ALIASES: dict[str, ModuleType] = {
    "locust": squall,
    "locust.argument_parser": squall.argument_parser,
    "locust.clients": squall.clients,
    "locust.contrib": squall.contrib,
    "locust.contrib.fasthttp": squall.contrib.fasthttp,
    "locust.contrib.mqtt": squall.contrib.mqtt,
    "locust.debug": squall.debug,
    "locust.env": squall.env,
    "locust.event": squall.event,
    "locust.exception": squall.exception,
    "locust.runners": squall.runners,
    "locust.shape": squall.shape,
    "locust.stats": squall.stats,
    "locust.user": squall.user,
    # The attribute `squall.user.task` is the @task decorator (as `locust.user.task` is in Locust), so the
    # module comes from sys.modules.
    "locust.user.task": sys.modules["squall.user.task"],
    "locust.user.markov_taskset": squall.user.markov_taskset,
    "locust.user.sequential_taskset": sys.modules["squall.user.task"],
    "locust.user.users": squall.user.users,
    "locust.user.wait_time": squall.user.wait_time,
}

# Without gevent installed (or with LOCUST_SKIP_MONKEY_PATCH), `import gevent` in a locustfile: squall's
# cooperative equivalents on its own hub (squall.gevent_compat). With it, gevent is gevent's own
# (squall.runtime.gevent_hub), as under Locust.
GEVENT_ALIASES: dict[str, ModuleType] = {
    "gevent": squall.gevent_compat,
    "gevent.event": squall.gevent_compat.event,
    "gevent.exceptions": squall.gevent_compat.exceptions,
    "gevent.greenlet": sys.modules["squall.gevent_compat.greenlet"],
    "gevent.hub": squall.gevent_compat.hub,
    "gevent.lock": squall.gevent_compat.lock,
    "gevent.monkey": squall.gevent_compat.monkey,
    "gevent.pool": squall.gevent_compat.pool,
    "gevent.queue": squall.gevent_compat.queue,
    "gevent.timeout": squall.gevent_compat.timeout,
}


# Locust's contrib modules for other clients (databases, SDKs, protocols) are plain Python on
# `events.request` and libraries gevent makes cooperative. squall has its own of those that need no
# Locust (squall/contrib/: socketio, dns, mongodb, postgres, oai), loaded when a file imports them, so
# that their libraries are needed only then; for the others (milvus, qdrant, csv_request_logger, and
# any later one) it runs Locust's own module, if Locust is installed, with `locust` resolving to squall.
LOCUST_ONLY_CONTRIB = ("milvus", "qdrant", "csv_request_logger")


class _Alias(importlib.abc.Loader):
    """Loads `locust.contrib.NAME` as squall's `squall.contrib.NAME`: one module under both names."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.spec: ModuleSpec | None = None

    def create_module(self, spec: ModuleSpec) -> ModuleType:
        module = importlib.import_module(self.target)
        self.spec = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        module.__spec__ = self.spec  # it stays squall's module (the import set the alias's spec on it)


class _ContribFinder(importlib.abc.MetaPathFinder):
    """`locust.contrib.NAME` that the table does not list: squall's `squall.contrib.NAME` if it has one,
    else Locust's own module run on squall's API (its source, under Locust's name), else not found."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        package, _, name = fullname.rpartition(".")
        if package != "locust.contrib":
            return None
        own = f"squall.contrib.{name}"
        if importlib.util.find_spec(own) is not None:
            return importlib.util.spec_from_loader(fullname, _Alias(own))
        source = locust_contrib_source(name)
        if source is not None:
            return importlib.util.spec_from_file_location(fullname, source)
        if name in LOCUST_ONLY_CONTRIB:
            raise ModuleNotFoundError(
                f"{fullname} is Locust's own module: squall runs it when Locust is installed (pip install locust)",
                name=fullname,
            )
        return None


def locust_contrib_source(name: str) -> Path | None:
    """The file of Locust's installed `locust/contrib/NAME.py`, found on sys.path without importing
    Locust (`locust` is squall in sys.modules); None without Locust, or for a name it does not have."""
    spec = importlib.machinery.PathFinder.find_spec("locust")
    for folder in (spec.submodule_search_locations or []) if spec is not None else []:
        source = Path(folder) / "contrib" / f"{name}.py"
        if name.isidentifier() and source.is_file():
            return source
    return None


_FINDER = _ContribFinder()


class _WebSocketFinder(importlib.abc.MetaPathFinder):
    """`import websocket` (websocket-client) as squall.contrib.websocket_client, its connections in the
    engine (docs/websocket.md), unless SQUALL_WEBSOCKET=library asks for websocket-client's own."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname != "websocket" or websocket_library():
            return None
        return importlib.util.spec_from_loader(fullname, _Alias("squall.contrib.websocket_client"))


def websocket_library() -> bool:
    """Whether `import websocket` is websocket-client's own (SQUALL_WEBSOCKET=library), not the engine's."""
    return os.environ.get("SQUALL_WEBSOCKET", "").strip().lower() == "library"


_WS_FINDER = _WebSocketFinder()


def install(gevent: bool = True) -> None:
    """Registers the aliases in `sys.modules`, replacing Locust's own modules if it is installed, after
    patching the standard library with real gevent as `import locust` does (squall.runtime.gevent_hub), or, if
    it is not installed, aliasing gevent to squall's own; `locust.contrib`'s other modules load when a
    file imports them (`_ContribFinder`), and `websocket` as squall's websocket-client on the engine
    (`_WebSocketFinder`)."""
    if not (gevent and squall.runtime.gevent_hub.enable()):
        sys.modules.update(GEVENT_ALIASES)
    sys.modules.update(ALIASES)
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
    if _WS_FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _WS_FINDER)
    known = sys.modules.get("websocket")
    if known is not None and hasattr(known, "__path__") and not websocket_library():
        # websocket-client imported before the run (by a plugin, say): modules importing it from now on
        # get the engine's; what imported it already keeps the library.
        sys.modules["websocket"] = importlib.import_module("squall.contrib.websocket_client")

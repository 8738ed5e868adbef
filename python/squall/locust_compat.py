"""While squall runs a locustfile, `import locust` (and its usual submodules) resolve to squall's
own compatible API, whether or not Locust is installed. squall's package tree mirrors Locust's, so
this is a table of aliases: each Locust module name and the squall module that stands for it."""

from __future__ import annotations

import sys
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
import squall.gevent_hub
import squall.runners
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
# (squall.gevent_hub), as under Locust.
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


def install() -> None:
    """Registers the aliases in `sys.modules`, replacing Locust's own modules if it is installed, after
    patching the standard library with real gevent as `import locust` does (squall.gevent_hub), or, if
    it is not installed, aliasing gevent to squall's own."""
    if not squall.gevent_hub.enable():
        sys.modules.update(GEVENT_ALIASES)
    sys.modules.update(ALIASES)

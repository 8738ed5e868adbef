"""Glue between a run's driving loop and its dashboard: the web options of every command, starting the
server, publishing the live stream once a second, and serving the end."""

from __future__ import annotations

import argparse
import sys
import time
from typing import TYPE_CHECKING, Any, Callable

from squall.errors import UsageError
from squall.web import page

if TYPE_CHECKING:
    from squall.web.server import Dashboard, LiveStore

PUBLISH_EVERY = 1.0  # seconds; the stream itself is per second
# After a run with a page open, the dashboard stays up this long so that the page fetches the result.
FINAL_GRACE = 2.0


def add_arguments(group: argparse._ArgumentGroup, default_port: int | None) -> None:
    """--web-host, --web-port, --web-auth (squall -f adds Locust's others)."""
    group.add_argument(
        "--web-port",
        type=int,
        default=default_port,
        metavar="PORT",
        help=f"serve the live dashboard on this port (default {default_port})"
        if default_port
        else "serve the live dashboard on this port (0: any free port)",
    )
    group.add_argument("--web-host", default="127.0.0.1", help="address the dashboard binds (default 127.0.0.1)")
    group.add_argument(
        "--web-auth",
        metavar="USER:PASS",
        help="HTTP basic authentication for the dashboard (needed for its controls beyond loopback)",
    )


def start(
    args: argparse.Namespace,
    command: str,
    kind: str,
    target: str,
    *,
    controls: dict[str, bool],
    form: dict[str, Any] | None = None,
    load: dict[str, Any] | None = None,
) -> Dashboard:
    """Starts the dashboard for this run (a one-line error, exit 2, when its port cannot be bound)."""
    from squall.web.server import Dashboard, LiveStore

    if args.web_auth is not None and ":" not in args.web_auth:
        raise UsageError("--web-auth takes USER:PASS")
    argv = getattr(args, "argv", None) or sys.argv[1:]
    store = LiveStore(page.meta(command, argv, target, controls=controls, form=form), kind)
    store.load = load or {}
    try:
        dashboard = Dashboard(store, args.web_host, args.web_port, args.web_auth)
    except OSError as e:
        raise UsageError(f"cannot serve the dashboard on {args.web_host}:{args.web_port}: {e.strerror or e}") from None
    dashboard.start()
    return dashboard


class Publisher:
    """Reads the engine's live stream at most once a `PUBLISH_EVERY` and hands it to the store."""

    def __init__(self, store: LiveStore, read: Callable[[int], dict[str, Any]]) -> None:
        self.store = store
        self.read = read
        self.cursor = 0
        self.last = 0.0

    def tick(self, force: bool = False, **fields: Any) -> None:
        now = time.monotonic()
        if not force and now - self.last < PUBLISH_EVERY:
            return
        self.last = now
        live = self.read(self.cursor)
        self.cursor = live["cursor"]
        self.store.publish(live, **fields)


def linger(dashboard: Dashboard, seconds: float = FINAL_GRACE) -> None:
    """Keeps serving briefly after the run so that an open page gets the final result."""
    time.sleep(seconds)
    dashboard.stop()

"""The environment a locustfile sees (`self.environment`, `locust.env`): host, events, the runner,
options, the request statistics (`stats`, read from the engine: squall.stats), the dashboard
(`web_ui`), and the exceptions its tasks raised."""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Callable, TypedDict

from squall import __version__, thresholds
from squall.errors import UsageError
from squall.event import Events
from squall.event import events as default_events
from squall.runners import Runner, for_process
from squall.stats import RequestStats

if TYPE_CHECKING:
    import argparse

    from squall.runtime.hub import Hub
    from squall.runtime.open_model import OpenPool
    from squall.shape import LoadTestShape
    from squall.thresholds import Verdict
    from squall.user.task import TaskSet
    from squall.user.users import User
    from squall.web.flask_app import LocustFlask
    from squall.web.server import Dashboard


class ExceptionEntry(TypedDict):
    """One kind of exception raised in tasks: how often, its message and traceback."""

    count: int
    message: str
    traceback: str


class Environment:
    def __init__(
        self,
        hub: Hub | None = None,
        host: str | None = None,
        user_classes: Iterable[type[User]] = (),
        parsed_options: argparse.Namespace | None = None,
        events: Events | None = None,
        shape_class: LoadTestShape | type[LoadTestShape] | None = None,
        *,
        reset_stats: bool | None = None,
        stop_timeout: float | None = None,
        catch_exceptions: bool = True,
        available_user_classes: dict[str, type[User]] | None = None,
    ) -> None:
        self.hub = hub  # the scheduler the users run on; squall's runs always have one
        self.host = host
        self.user_classes = list(user_classes)
        self.parsed_options = parsed_options
        self.events = events or default_events
        # Locust's: the shape's instance, which the run ticks (a class given is made into one), with
        # the runner attached, so that a listener's `environment.shape_class.get_current_user_count()` reads it.
        self.shape_class: LoadTestShape | None = shape_class() if isinstance(shape_class, type) else shape_class
        # Locust's: whether the stats reset once every user is spawned (--reset-stats), the seconds users
        # have to finish their task at the end (-s, a float), task exceptions caught and counted (squall
        # always does), and the User classes of the locustfile, chosen or not, by name.
        self.reset_stats = bool(getattr(parsed_options, "reset_stats", False)) if reset_stats is None else reset_stats
        if stop_timeout is None:
            stop_timeout = float(getattr(parsed_options, "stop_timeout", 0.0) or 0.0) if parsed_options else 0.0
        self.stop_timeout = stop_timeout
        self.catch_exceptions = catch_exceptions
        self.available_user_classes = available_user_classes
        self.runner: Runner = for_process(self)
        if self.shape_class is not None:
            self.shape_class.runner = self.runner
        self.process_exit_code: int | None = None
        self.exceptions: dict[tuple[str, str], ExceptionEntry] = {}  # keyed by (message, traceback)
        self._user_ids = itertools.count(1)
        self.stats = RequestStats(environment=self)
        self.web_ui: WebUI | None = None  # the dashboard; None when headless (see `use_dashboard`)
        # The open model (`--rate`): where users take their next arrival; None in the closed model.
        self.open_pool: OpenPool | None = None
        self.started_at: float | None = None  # time.monotonic() when the test started
        self.users_failed = 0  # users this test that an exception ended (on_start's, or outside a task)
        self.result: dict[str, Any] | None = None  # the run's result document, once it has ended

    def use_dashboard(self, dashboard: Dashboard | None, web_login: bool = False) -> WebUI | None:
        """`web_ui` for the run's dashboard (None: headless); returns it, for the `init` event."""
        self.web_ui = WebUI(dashboard, self, web_login) if dashboard is not None else None
        return self.web_ui

    def check_thresholds(self, *expressions: str) -> list[Verdict]:
        """The verdicts of threshold expressions (`--threshold`'s language: "p95<300ms", "GET /x:
        error_rate<1%") on the run so far, or on its result once it has ended (in `test_stop` and
        `quitting` listeners: exact at any percentile). During the run they read the live totals, as
        `--threshold-abort` does. squall's own API: Locust has no thresholds. ValueError for a
        malformed expression."""
        parsed = thresholds.parse_all(list(expressions))
        if self.result is not None:
            return thresholds.evaluate_all(parsed, self.result)
        if self.hub is None or self.started_at is None:
            raise RuntimeError("the test has not started")
        totals = self.hub.engine.live(1 << 62)["totals"]  # a cursor past every second: the totals only
        doc = {**totals, "duration_s": time.monotonic() - self.started_at}
        return [thresholds.evaluate(t, doc, thresholds.live_percentile) for t in parsed]

    def begin_test(self) -> None:
        """Another test in this process (the dashboard's New after a Stop), as Locust's `runner.start()`
        begins one: the stats and the exceptions start empty, and the runner is ready again. The run
        gives the hub a new engine first, whose clock starts then."""
        self.result = None
        self.started_at = None
        self.open_pool = None
        self.users_failed = 0
        self.exceptions.clear()
        self.stats.begin_test()
        self.runner.begin_test()

    @property
    def user_classes_by_name(self) -> dict[str, type[User]]:
        return {u.__name__: u for u in self.user_classes}

    def next_user_id(self) -> int:
        return next(self._user_ids)

    def report_exception(self, user: User | TaskSet | None, exc: BaseException, tb: str) -> None:
        """An exception in a task (or in making a user: `user` None): counted with its traceback, and the
        user goes on (as in Locust). `user` is user_error's user_instance: the TaskSet that ran the task
        (a User's own tasks: its DefaultTaskSet), the User for one outside a task (on_start), as Locust's."""
        # Locust's message is str(exc) alone (a KeyError's is its quoted key); the type is in the traceback.
        self.count_exception(str(exc), tb)
        self.events.user_error.fire(user_instance=user, exception=exc, tb=exc.__traceback__)

    def count_exception(self, message: str, tb: str, count: int = 1) -> None:
        """`count` more of an exception in the test's exceptions (`runner.exceptions` reads them too)."""
        entry = self.exceptions.setdefault((message, tb), {"count": 0, "message": message, "traceback": tb})
        entry["count"] += count

    def user_stopped(self, user: User) -> None:
        self.runner.users.pop(user, None)
        if self.hub is not None:
            self.hub.close_user(user.user_id)
            for session in user.__dict__.get("_squall_sessions", ())[1:]:  # its other HttpSessions (clients.py)
                self.hub.close_user(session)


class WebUI:
    """`environment.web_ui` while squall serves its dashboard: where it listens, and Locust's Flask `app`,
    served beside the dashboard (squall.web.flask_app: made on first use, or at start with --web-login),
    with Locust's `template_args`, `auth_args`, `login_manager` (--web-login) and
    `auth_required_if_enabled`."""

    def __init__(self, dashboard: Dashboard, environment: Environment | None = None, web_login: bool = False) -> None:
        self.dashboard = dashboard
        self.environment = environment
        self.web_login = web_login
        host, port = dashboard.server.server_address[:2]
        self.host = host.decode() if isinstance(host, bytes) else str(host)
        self.port = int(port)
        self.template_args: dict[str, Any] = {}  # Locust's values for its page (update_template_args)
        self.greenlet = None  # the dashboard serves from threads, not a greenlet
        self.server = dashboard.server
        self._flask: LocustFlask | None = None
        if web_login:
            self._app()  # its login manager exists before `init`, where files set it up

    def _app(self) -> LocustFlask:
        if self._flask is None:
            # For start-up: Flask loads only for a file that uses the app (most never do).
            from squall.web.flask_app import LocustFlask

            if self.environment is None:
                raise UsageError("environment.web_ui.app needs the run's environment")
            self._flask = LocustFlask(self.environment, self.dashboard, self.web_login)
            self.dashboard.web_app = self._flask  # the dashboard hands it the paths it does not serve
        return self._flask

    @property
    def app(self) -> Any:
        """Locust's Flask app: the locustfile's routes, blueprints and hooks are served beside the
        dashboard."""
        return self._app().app

    @property
    def auth_args(self) -> dict[str, Any]:
        return self._app().auth_args

    @auth_args.setter
    def auth_args(self, value: dict[str, Any]) -> None:
        self._app().auth_args = value

    @property
    def login_manager(self) -> Any:
        if not self.web_login:
            raise AttributeError("The login_manager is only available with --web-login.\n")
        return self._app().login_manager

    def auth_required_if_enabled(self, view: Callable[..., Any]) -> Callable[..., Any]:
        """Locust's decorator for a file's routes: a logged-in user needed with --web-login."""
        return self._app().auth_required_if_enabled(view) if self.web_login else view

    def update_template_args(self) -> None:
        """Locust's values for its page, refreshed (squall's page does not read them; files pass them on)."""
        env = self.environment
        store = self.dashboard.store
        options = env.parsed_options if env is not None else None
        self.template_args.update(
            {
                "locustfile": getattr(options, "locustfile", None),
                "state": store.state,
                "is_distributed": False,
                "user_count": store.users,
                "version": __version__,
                "host": (env.host if env is not None else None) or "",
                "num_users": getattr(options, "num_users", None),
                "spawn_rate": getattr(options, "spawn_rate", None),
                "run_time": getattr(options, "run_time", None),
            }
        )

    @property
    def url(self) -> str:
        return self.dashboard.url

    def stop(self) -> None:
        self.dashboard.stop()

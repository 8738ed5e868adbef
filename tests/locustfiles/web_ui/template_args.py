"""Locust's web UI object as extension files use it: `from locust import web`, `update_template_args()`
and `template_args`, `auth_required_if_enabled` on a route of the file's. (Locust 2.47 has no
`set_static_modern_ui()`, which its web_ui_cache_stats.py example still calls: its /extend route fails
there as in squall.)"""

from flask import jsonify
from locust import HttpUser, events, task, web  # noqa: F401  # files import it; the object is web_ui


class Idle(HttpUser):
    @task
    def nothing(self):
        pass


@events.init.add_listener
def add_route(environment, **_kw):
    web_ui = environment.web_ui
    if not web_ui:
        return

    @web_ui.app.route("/template-args")
    @web_ui.auth_required_if_enabled
    def template_args():
        web_ui.update_template_args()
        args = web_ui.template_args
        return jsonify({k: args.get(k) for k in ("host", "state", "num_users", "is_distributed", "user_count")})

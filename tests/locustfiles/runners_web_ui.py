"""Locust's documented way to add a page to the web UI: in `init`, when there is one."""

from locust import HttpUser, constant, events, task


@events.init.add_listener
def on_init(environment, web_ui=None, **kw):
    if environment.web_ui:
        assert web_ui is environment.web_ui

        @environment.web_ui.app.route("/added_page")
        def my_added_page():
            return "Another page"


class Quick(HttpUser):
    wait_time = constant(0.1)

    @task
    def ok(self):
        self.client.get("/ok")

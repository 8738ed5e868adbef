"""An extended web UI (the behaviour of Locust's extend_web_ui.py): a request listener sums each name's
response lengths; an `after_request` hook adds them to Locust's `/stats/requests` JSON as
`extended_stats`; a blueprint serves them as CSV, and `/extend`, the tool's own page (`index.html`) with
a "Content Length" tab, its table and its CSV among the downloads. The users request the tool's own UI
(-H its URL), in order (CSV, CSV, stats: the example's weights 2 and 1), ITERATIONS tasks each."""

import json

from _bounded import count
from flask import Blueprint, make_response, render_template, request
from locust import HttpUser, SequentialTaskSet, constant, events, task

lengths: dict[str, int] = {}
blueprint = Blueprint("lengths", __name__)


class Browse(SequentialTaskSet):
    @task
    def csv_once(self):
        count(self)
        self.client.get("/content-length/csv")

    @task
    def csv_twice(self):
        count(self)
        self.client.get("/content-length/csv")

    @task
    def stats(self):
        count(self)
        self.client.get("/stats/requests")


class Browser(HttpUser):
    wait_time = constant(0)
    tasks = [Browse]


@blueprint.route("/content-length/csv")
def lengths_csv():
    lines = ['"Name","Total content-length"', *(f'"{name}",{total:.2f}' for name, total in lengths.items())]
    response = make_response("\n".join(lines))
    response.headers["Content-type"] = "text/csv"
    return response


@events.init.add_listener
def extend(environment, **_kw):
    if not environment.web_ui:
        return

    @environment.web_ui.app.after_request
    def add_lengths(response):
        if request.path == "/stats/requests":
            rows = [{"name": n, "safe_name": n, "content_length": total} for n, total in lengths.items()]
            extended = [{"key": "content-length", "data": rows}]
            response.set_data(json.dumps({**response.json, "extended_stats": extended}))
        return response

    @blueprint.route("/extend")
    def extended_page():
        environment.web_ui.update_template_args()
        return render_template(
            "index.html",
            template_args={
                **environment.web_ui.template_args,
                "extended_tabs": [{"title": "Content Length", "key": "content-length"}],
                "extended_tables": [
                    {
                        "key": "content-length",
                        "structure": [
                            {"key": "name", "title": "Name"},
                            {"key": "content_length", "title": "Total content length"},
                        ],
                    }
                ],
                "extended_csv_files": [
                    {"href": "/content-length/csv", "title": "Download content length statistics CSV"}
                ],
            },
        )

    environment.web_ui.app.register_blueprint(blueprint)


@events.request.add_listener
def add_length(name, response_length, **_kw):
    lengths[name] = lengths.get(name, 0) + response_length


@events.reset_stats.add_listener
def forget():
    lengths.clear()

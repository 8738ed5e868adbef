"""Locust's extend_web_ui.py: an `after_request` hook adds the content lengths to Locust's
`/stats/requests` JSON, a blueprint serves them as CSV (`/content-length/csv`), a request listener
counts them. The users request the web UI itself (-H its URL), ITERATIONS tasks each."""

import json
import os
from time import time

from _bounded import count
from flask import Blueprint, make_response, request
from locust import HttpUser, SequentialTaskSet, constant, events, task


class MyTaskSet(SequentialTaskSet):  # Locust's is a TaskSet of weights 2 and 1: here in order, for exact counts
    @task
    def index(self):
        count(self)
        self.client.get("/content-length/csv")

    @task
    def index_again(self):
        count(self)
        self.client.get("/content-length/csv")

    @task
    def stats(self):
        count(self)
        self.client.get("/stats/requests")


class WebsiteUser(HttpUser):
    wait_time = constant(0)
    tasks = [MyTaskSet]


stats = {}
path = os.path.dirname(os.path.abspath(__file__))
extend = Blueprint("extend", "extend_web_ui", static_folder=f"{path}/static/", static_url_path="/extend/static/")


@events.init.add_listener
def locust_init(environment, **kwargs):
    if environment.web_ui:

        def get_content_length_stats():
            return [
                {"name": name, "safe_name": name, "content_length": s["content-length"]} for name, s in stats.items()
            ]

        @environment.web_ui.app.after_request
        def extend_stats_response(response):
            if request.path != "/stats/requests":
                return response
            response.set_data(
                json.dumps(
                    {**response.json, "extended_stats": [{"key": "content-length", "data": get_content_length_stats()}]}
                )
            )
            return response

        @extend.route("/content-length/csv")
        def request_content_length_csv():
            rows = ['"Name","Total content-length"'] + [f'"{u}",{s["content-length"]:.2f}' for u, s in stats.items()]
            response = make_response("\n".join(rows))
            response.headers["Content-type"] = "text/csv"
            response.headers["Content-disposition"] = f"attachment;filename=content_length{time()}.csv"
            return response

        environment.web_ui.app.register_blueprint(extend)


@events.request.add_listener
def on_request(request_type, name, response_time, response_length, exception, context, **kwargs):
    stats.setdefault(name, {"content-length": 0})
    stats[name]["content-length"] += response_length


@events.reset_stats.add_listener
def on_reset_stats():
    global stats
    stats = {}

"""Validation with rest() against routes the file adds to the web UI (the behaviour of Locust's
response_validations.py): the users post a login and a checkout to the tool's own UI (-H its URL);
`Validating` judges each JSON answer, `Plain` does not; a request listener ends the task at its first
failed request (RescheduleTask), so the request after the app's 500 is never sent. ITERATIONS tasks per
user."""

from _bounded import count
from flask import request
from locust import FastHttpUser, events, task
from locust.exception import RescheduleTask

LOGIN = {"username": "ada", "password": "x"}


class Plain(FastHttpUser):
    @task
    def buy(self):
        count(self)
        self.client.request("POST", "/authenticate", json=LOGIN)
        self.client.request("POST", "/checkout/confirm", json={"foo": "bar"})


class Validating(FastHttpUser):
    @task
    def buy(self):
        count(self)
        with self.rest("POST", "/authenticate", json=LOGIN) as resp:
            greeting = resp.js.get("message")
            if resp.js.get("error"):
                resp.failure(resp.js["error"])
            elif greeting and greeting != "Welcome ada!":
                resp.failure(f"unexpected greeting: {greeting}")
        with self.rest("POST", "/checkout/confirm", json={"foo": "bar"}) as resp:
            if "orderId" not in resp.js:
                resp.failure("no orderId")
        with self.rest("POST", "/checkout/confirm", json={"bar": "foo"}):  # the route raises: a 500
            pass
        self.client.get("/never")


@events.init.add_listener
def stop_tasks_at_failures(environment, **_kw):
    @events.request.add_listener
    def on_request(exception, **_kw):
        if exception:
            raise RescheduleTask()


@events.init.add_listener
def add_routes(environment, **_kw):
    if not environment.web_ui:
        return
    app = environment.web_ui.app

    @app.route("/authenticate", methods=["POST"])
    def authenticate():
        return {"message": "Welcome " + request.get_json()["username"] + "!"}

    @app.route("/checkout/confirm", methods=["POST"])
    def confirm():
        request.get_json()["foo"]  # a KeyError for an order without it
        return {"orderId": 7}

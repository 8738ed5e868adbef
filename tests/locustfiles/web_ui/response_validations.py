"""Locust's response_validations.py, bounded: POST routes added to the web UI's Flask app are the users'
target; GoodUser validates with rest(); a request listener ends a task at its first failed request
(RescheduleTask). Each user runs ITERATIONS tasks."""

from _bounded import count
from flask import request
from locust import FastHttpUser, events, task
from locust.exception import RescheduleTask


class BadUser(FastHttpUser):
    @task
    def t(self):
        count(self)
        self.client.request("POST", "/authenticate", json={"username": "foo", "password": "bar"})
        self.client.request("POST", "/checkout/confirm", json={"foo": "bar"})


class GoodUser(FastHttpUser):
    @task
    def t(self):
        count(self)
        with self.rest("POST", "/authenticate", json={"username": "foo", "password": "bar"}) as resp:
            if error := resp.js.get("error"):
                resp.failure(error)
            elif message := resp.js.get("message"):  # noqa: SIM102  # Locust's example, as written
                if message != "Welcome foo!":
                    resp.failure(f"Wrong welcome message: {message}")
        with self.rest("POST", "/checkout/confirm", json={"foo": "bar"}) as resp:
            if not resp.js.get("orderId"):
                resp.failure("orderId missing")
        with self.rest("POST", "/checkout/confirm", json={"nofoo": "bar"}) as resp:  # the app's 500
            pass
        self.client.get("/never")  # the listener ended the task at the failure above


@events.init.add_listener
def register_request_listener(environment, **kwargs):
    @events.request.add_listener
    def request_listener(exception, **kwargs):
        if exception:
            raise RescheduleTask()


@events.init.add_listener
def locust_init(environment, **kwargs):
    if environment.web_ui:

        @environment.web_ui.app.route("/authenticate", methods=["POST"])
        def authenticate():
            username = request.get_json()["username"]
            return {"message": f"Welcome {username}!"}

        @environment.web_ui.app.route("/checkout/confirm", methods=["POST"])
        def checkout_confirm():
            request.get_json()["foo"]
            return {"orderId": 42}

"""Locust's web_ui_auth/basic.py with --web-login: the locustfile's Flask-Login user loader and login
route; the dashboard is for logged-in users."""

from flask import Blueprint, redirect, request, session, url_for
from flask_login import UserMixin, login_user
from locust import HttpUser, events, task


class LocustHttpUser(HttpUser):
    @task
    def example(self):
        self.client.get("/")


class AuthUser(UserMixin):
    def __init__(self, username):
        self.username = username

    def get_id(self):
        return self.username


def load_user(username):
    return AuthUser(username)


@events.init.add_listener
def locust_init(environment, **_kwargs):
    if environment.web_ui:
        auth_blueprint = Blueprint("auth", "web_ui_auth")
        environment.web_ui.login_manager.user_loader(load_user)
        environment.web_ui.app.config["SECRET_KEY"] = "a test secret"
        environment.web_ui.auth_args = {"username_password_callback": "/login_submit"}

        @auth_blueprint.route("/login_submit", methods=["POST"])
        def login_submit():
            username = request.form.get("username")
            password = request.form.get("password")
            if password == "right":
                login_user(AuthUser(username))
                return redirect(url_for("locust.index"))
            session["auth_error"] = "Invalid username or password"
            return redirect(url_for("locust.login"))

        environment.web_ui.app.register_blueprint(auth_blueprint)

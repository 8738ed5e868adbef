"""--web-login (the behaviour of Locust's web_ui_auth example): the file gives the login manager its user
loader, a secret for the session cookie, `auth_args` for the login page and the route its form posts
to, where the password "right" logs in."""

from flask import Blueprint, redirect, request, session, url_for
from flask_login import UserMixin, login_user
from locust import HttpUser, events, task


class Visitor(HttpUser):
    @task
    def home(self):
        self.client.get("/")


class Account(UserMixin):
    def __init__(self, name):
        self.id = name


@events.init.add_listener
def set_up_login(environment, **_kw):
    web_ui = environment.web_ui
    if not web_ui:
        return
    web_ui.login_manager.user_loader(Account)
    web_ui.app.config["SECRET_KEY"] = "a test secret"
    web_ui.auth_args = {"username_password_callback": "/login_submit"}
    auth = Blueprint("auth", __name__)

    @auth.route("/login_submit", methods=["POST"])
    def login_submit():
        if request.form.get("password") == "right":
            login_user(Account(request.form.get("username")))
            return redirect(url_for("locust.index"))
        session["auth_error"] = "wrong username or password"
        return redirect(url_for("locust.login"))

    web_ui.app.register_blueprint(auth)

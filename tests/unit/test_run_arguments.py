"""`squall -f`'s command line: Locust's parser keywords, environment variables by the names Locust's
options declare, the forms of -f, the checks before a run, --html's tags."""

import argparse

import pytest

from squall import config, locustfile
from squall.cli import build_parser
from squall.commands import run_checks, run_output
from squall.errors import UsageError
from squall.options.arguments import Parser
from squall.user.task import task
from squall.user.users import HttpUser


def test_locust_keywords_on_the_parser_and_its_groups():
    p = Parser(prog="x")
    a = p.add_argument("--token", env_var="TOKEN", is_secret=True, include_in_web_ui=True)
    b = p.add_argument_group("g").add_argument("--tenant", env_var="TENANT", include_in_web_ui=False)
    assert (a.env_var, a.is_secret, b.env_var, b.include_in_web_ui, b.is_secret) == (
        "TOKEN",
        True,
        "TENANT",
        False,
        False,
    )
    assert p.secret_options == {"token"}


def test_environment_variables_by_their_declared_names(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    parser, run_parser = build_parser()
    run_parser.add_argument("--tenant", default="t0", env_var="MY_TENANT")
    environ = {"MY_TENANT": "acme", "LOCUST_USERCLASS_PICKER": "true", "LOCUST_CSV_FULL_HISTORY": "1"}
    config.apply(run_parser, ["run"], environ)
    args = parser.parse_args(["run"])
    assert (args.tenant, args.class_picker, args.csv_full_history) == ("acme", True, True)
    config.apply(run_parser, ["run"], {"LOCUST_USER_CLASSES": "A B"})
    assert parser.parse_args(["run"]).user_classes == ["A", "B"]


def test_locustfile_paths(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "d" / "deep").mkdir(parents=True)
    for name in ("d/a.py", "d/deep/b.py", "d/_skip.py", "d/notes.txt", "api.py"):
        (tmp_path / name).write_text("")
    assert locustfile.paths("d") == [str(tmp_path / "d/a.py"), str(tmp_path / "d/deep/b.py")]
    assert locustfile.paths("api.py, d/a.py") == [str(tmp_path / "api.py"), str(tmp_path / "d/a.py")]
    assert locustfile.paths("api") == [str(tmp_path / "api.py")]
    assert locustfile.paths("d.deep.b") == [str(tmp_path / "d/deep/b.py")]
    for bad in ("missing.py", "no.such.module", "d/notes.txt"):
        with pytest.raises(locustfile.ScriptError, match="not found"):
            locustfile.paths(bad)


class WithHost(HttpUser):
    host = "http://127.0.0.1:1"

    @task
    def t(self):
        pass


class NoHost(HttpUser):
    @task
    def t(self):
        pass


class NoTasks(HttpUser):
    host = "http://127.0.0.1:1"


@pytest.mark.parametrize(
    "classes, host, users, message",
    [
        ([WithHost], None, 0, "at least 1"),
        ([NoHost], None, 1, "NoHost has no host"),
        ([NoHost], "ftp://h/", 1, "must start with http://"),
        ([NoHost], "example.com", 1, "must start with http://"),
    ],
)
def test_checks_before_a_run(classes, host, users, message):
    with pytest.raises(UsageError, match=message):
        run_checks.check(classes, host, users, None, host_from_page=False)


def test_checks_that_pass():
    run_checks.check([WithHost], None, 1, None, host_from_page=False)
    run_checks.check([NoTasks], None, 1, None, host_from_page=False)  # runs, as in Locust (its users fail)
    run_checks.check([NoHost], "https://example.com", 3, None, host_from_page=False)
    run_checks.check([NoHost], None, 1, None, host_from_page=True)  # the page asks for the host


def test_html_tags_as_locust_replaces_them():
    args = argparse.Namespace(html="r_{u}_{r}_{t}.html", num_users=10, spawn_rate=2.5, run_time=60)
    assert run_output.html_path(args) == "r_10_2.5_60.html"
    args = argparse.Namespace(html="r_{u}_{r}_{t}.html", num_users=1, spawn_rate=1.0, run_time=None)
    assert run_output.html_path(args) == "r_1_1_{t}.html"  # no run time: the tag stays, as in Locust


def test_exit_code_precedence_is_locusts(monkeypatch):
    """Locust's shutdown (locust/main.py): process_exit_code, then --exit-code-on-error when requests
    failed or tasks raised, then 2 when an event listener raised, then 0 (squall's failed threshold, 99,
    after the file's own code)."""
    from squall import log
    from squall.env import Environment

    def result(failures=0, exceptions=0, thresholds=()):
        return {"aggregate": {"failures": failures}, "exceptions": [{"count": exceptions}], "thresholds": thresholds}

    args = argparse.Namespace(exit_code_on_error=3)
    env = Environment()
    monkeypatch.setattr(log, "unhandled_greenlet_exception", False)
    assert run_output.exit_code(result(), args, env) == (0, "")
    monkeypatch.setattr(log, "unhandled_greenlet_exception", True)
    assert run_output.exit_code(result(), args, env)[0] == 2
    assert "an event listener raised" in run_output.exit_code(result(), args, env)[1]
    assert run_output.exit_code(result(failures=1), args, env)[0] == 3
    assert run_output.exit_code(result(exceptions=1), args, env)[0] == 3
    assert run_output.exit_code(result(thresholds=[{"passed": False}]), args, env)[0] == 99
    env.process_exit_code = 7
    assert run_output.exit_code(result(failures=1), args, env)[0] == 7

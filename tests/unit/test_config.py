"""Locust's configuration sources and their precedence, lowest first: ~/.locust.conf, `[tool.locust]` in
./pyproject.toml, ./locust.conf, --config FILE, LOCUST_* environment variables, the command line."""

import os
import sys

import pytest

from squall import config
from squall.cli import build_parser

needs_tomllib = pytest.mark.skipif(sys.version_info < (3, 11), reason="[tool.locust] needs tomllib (3.11+)")


@pytest.fixture
def dirs(tmp_path, monkeypatch):
    """A home and a working directory of their own, and no LOCUST_* variables from outside."""
    home, cwd = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    cwd.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(cwd)
    for name in [n for n in os.environ if n.startswith("LOCUST_")]:
        monkeypatch.delenv(name)
    return home, cwd


def write_sources(home, cwd, users):
    """Each source sets `users` to its own value; `users` maps a source's name to it (absent: not written)."""
    if "home" in users:
        (home / ".locust.conf").write_text(f"users = {users['home']}\n")
    if "pyproject" in users:
        (cwd / "pyproject.toml").write_text(f"[tool.locust]\nusers = {users['pyproject']}\n")
    if "locust.conf" in users:
        (cwd / "locust.conf").write_text(f"# comment\n\n[section]\nusers = {users['locust.conf']}\n")
    if "config" in users:
        (cwd / "extra.conf").write_text(f"users = {users['config']}\n")


ORDER = ["home", "pyproject", "locust.conf", "config", "env", "command line"]


@needs_tomllib
@pytest.mark.parametrize("top", range(len(ORDER)))
def test_each_source_beats_the_ones_below_it(dirs, top):
    home, cwd = dirs
    present = ORDER[: top + 1]
    values = {name: str(10 + i) for i, name in enumerate(ORDER)}
    write_sources(home, cwd, {k: values[k] for k in present})
    argv = ["run", "-f", "x.py"]
    if "config" in present:
        argv += ["--config", "extra.conf"]
    if "command line" in present:
        argv += ["-u", values["command line"]]
    environ = {"LOCUST_USERS": values["env"]} if "env" in present else {}
    parser, run_parser = build_parser()
    config.apply(run_parser, argv, environ)
    assert parser.parse_args(argv).users == values[ORDER[top]]


def test_gather_reads_every_source_but_the_command_line(dirs):
    home, cwd = dirs
    (home / ".locust.conf").write_text("users = 1\nspawn-rate = 2\nhost = http://home\n")
    (cwd / "locust.conf").write_text("users = 3\nrun-time = 5s\n")
    (cwd / "my.conf").write_text('run-time = "7s"\n')
    gathered = config.gather(["--config=my.conf"], environ={"LOCUST_HOST": "http://env", "OTHER": "x"}, cwd=cwd)
    assert gathered == {"users": "3", "spawn_rate": "2", "host": "http://env", "run_time": "7s"}


def test_gather_takes_home_and_cwd_as_given(tmp_path):
    (tmp_path / ".locust.conf").write_text("users = 4\n")
    assert config.gather([], environ={}, home=tmp_path, cwd=tmp_path / "nowhere") == {"users": "4"}


@needs_tomllib
def test_pyproject_values_keep_their_toml_types(dirs):
    _home, cwd = dirs
    (cwd / "pyproject.toml").write_text('[tool.locust]\nusers = 5\nheadless = true\ntags = ["a", "b"]\n')
    parser, run_parser = build_parser()
    config.apply(run_parser, ["run"], {})
    args = parser.parse_args(["run"])
    assert (args.users, args.headless, args.tags) == ("5", True, ["a", "b"])


def test_values_are_converted_as_the_flags_take_them(dirs):
    _home, cwd = dirs
    (cwd / "locust.conf").write_text("headless = yes\ntags = a, b c\nexit-code-on-error = 3\nonly-summary = off\n")
    parser, run_parser = build_parser()
    config.apply(run_parser, ["run"], {})
    args = parser.parse_args(["run"])
    assert (args.headless, args.tags, args.exit_code_on_error, args.only_summary) == (True, ["a", "b", "c"], 3, False)


def test_the_command_line_beats_a_config_flag(dirs):
    _home, cwd = dirs
    (cwd / "locust.conf").write_text("headless = false\nusers = 9\n")
    parser, run_parser = build_parser()
    argv = ["run", "--headless", "-u", "2"]
    config.apply(run_parser, argv, {"LOCUST_HEADLESS": "false"})
    args = parser.parse_args(argv)
    assert (args.headless, args.users) == (True, "2")


def test_unknown_settings_get_one_warning(dirs, capsys):
    _home, cwd = dirs
    (cwd / "locust.conf").write_text("no-such-flag = 1\nusers = 2\n")
    _parser, run_parser = build_parser()
    config.apply(run_parser, ["run"], {})
    assert capsys.readouterr().err == "squall: warning: locust.conf: ignoring unknown setting 'no-such-flag'\n"


@pytest.mark.parametrize(
    "conf, argv, message",
    [
        ("headless = maybe\n", [], "^locust.conf: setting 'headless' must be true or false, not 'maybe'$"),
        # Values the run reads as it starts are checked here, where their file is known.
        ("threshold = p95<1s; p99<zz\n", [], "^locust.conf: setting 'threshold': invalid threshold 'p99<zz'"),
        ("spawn-rate = 0\n", [], "^locust.conf: setting 'spawn-rate': invalid spawn rate '0'$"),
        ("users = many\n", [], "^locust.conf: setting 'users': invalid number of users 'many'$"),
        ("run-time = 5x\n", [], "^locust.conf: setting 'run-time': invalid duration '5x'"),
        ("threshold-grace = soon\n", [], "^locust.conf: setting 'threshold-grace': invalid duration 'soon'"),
        ("users\n", [], "locust.conf:1: expected 'key = value'"),
        ("", ["--config", "missing.conf"], "config file 'missing.conf' not found"),
    ],
)
def test_bad_config_is_a_config_error(dirs, conf, argv, message):
    _home, cwd = dirs
    (cwd / "locust.conf").write_text(conf)
    _parser, run_parser = build_parser()
    with pytest.raises(config.ConfigError, match=message):
        config.apply(run_parser, ["run", *argv], {})


def test_a_bad_environment_value_names_the_environment(dirs):
    _parser, run_parser = build_parser()
    with pytest.raises(config.ConfigError, match=r"^the environment: setting 'LOCUST_THRESHOLD': invalid threshold"):
        config.apply(run_parser, ["run"], {"LOCUST_THRESHOLD": "p95<x"})

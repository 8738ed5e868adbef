"""Locust's configuration sources, lowest precedence first: ~/.locust.conf, `[tool.locust]` in
./pyproject.toml, ./locust.conf, `--config FILE`, then `LOCUST_*` environment variables; the command
line beats them all. They become the run parser's defaults.

Config files hold `key = value` lines (Locust's long option names: `users = 10`, `spawn-rate = 2`,
`headless = true`); `[tool.locust]` holds the same keys in TOML."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib

TRUE = {"1", "true", "yes", "on"}
FALSE = {"0", "false", "no", "off", ""}


class ConfigError(Exception):
    pass


def _read_conf(path: str | Path) -> dict[str, str]:
    values = {}
    for n, line in enumerate(Path(path).read_text().splitlines(), 1):
        line = line.strip()
        if not line or line.startswith(("#", ";", "[")):
            continue
        key, sep, value = line.partition("=")
        if not sep:
            raise ConfigError(f"{path}:{n}: expected 'key = value'")
        values[key.strip()] = value.strip().strip('"').strip("'")
    return values


def _read_pyproject(path: str | Path) -> dict[str, Any]:
    if sys.version_info >= (3, 11):
        try:
            data = tomllib.loads(Path(path).read_text())
        except (OSError, tomllib.TOMLDecodeError) as e:
            raise ConfigError(f"{path}: {e}") from None
        section: dict[str, Any] = data.get("tool", {}).get("locust", {})
        return section
    return {}  # no TOML reader in the standard library before 3.11


def _config_arg(argv: Sequence[str]) -> str | None:
    for i, a in enumerate(argv):
        if a == "--config" and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith("--config="):
            return a.split("=", 1)[1]
    return None


def _sources(
    argv: Sequence[str], environ: Mapping[str, str], home: str | Path | None, cwd: str | Path
) -> tuple[dict[str, Any], dict[str, str]]:
    """(the config files' settings, the LOCUST_* environment variables), each later file winning."""
    merged: dict[str, Any] = {}
    home_conf = Path(home or Path.home()) / ".locust.conf"
    for source in (home_conf, Path(cwd) / "pyproject.toml", Path(cwd) / "locust.conf"):
        if source.is_file():
            merged.update(_read_pyproject(source) if source.name == "pyproject.toml" else _read_conf(source))
    explicit = _config_arg(argv)
    if explicit:
        if not Path(explicit).is_file():
            raise ConfigError(f"config file '{explicit}' not found")
        merged.update(_read_pyproject(explicit) if explicit.endswith(".toml") else _read_conf(explicit))
    files = {k.replace("-", "_").lower(): v for k, v in merged.items()}
    return files, {k: v for k, v in environ.items() if k.startswith("LOCUST_")}


def gather(
    argv: Sequence[str],
    environ: Mapping[str, str] | None = None,
    home: str | Path | None = None,
    cwd: str | Path = ".",
) -> dict[str, Any]:
    """(key -> raw value) from every source but the command line, later sources winning. Values are
    text, or what TOML holds for `[tool.locust]` keys (numbers, booleans, lists). An environment
    variable LOCUST_NAME gives the key `name`."""
    files, env = _sources(argv, os.environ if environ is None else environ, home, cwd)
    return {**files, **{k[len("LOCUST_") :].lower(): v for k, v in env.items()}}


def apply(
    parser: argparse.ArgumentParser,
    argv: Sequence[str],
    environ: Mapping[str, str] | None = None,
    warn: bool = True,
) -> None:
    """Sets the parser's defaults from the config sources. A file's key names an option by its long
    name (`spawn-rate`); an environment variable sets the option that declares it (`env_var=`, as
    Locust's parser does: LOCUST_MODE_MASTER sets --master), else the option LOCUST_NAME names.
    An unknown key in a file gets one warning line (with `warn`); an unknown LOCUST_* variable is
    ignored, as Locust ignores it."""
    environ = os.environ if environ is None else environ
    files, env = _sources(argv, environ, None, ".")
    actions = {a.dest: a for a in parser._actions if a.option_strings}
    declared: dict[str, argparse.Action] = {a.env_var: a for a in parser._actions if getattr(a, "env_var", None)}  # type: ignore[attr-defined]
    defaults = {}
    for key, value in files.items():
        if key in ("config", "locustfile_path"):
            continue
        action = actions.get(key)
        if action is None:
            if warn:
                sys.stderr.write(f"squall: warning: ignoring unknown setting '{key}'\n")
            continue
        defaults[action.dest] = _convert(action, value, key)
    for name, value in env.items():  # LOCUST_NAME sets the option NAME, unless one declares it
        action = actions.get(name[len("LOCUST_") :].lower())
        if action is not None and name not in declared:
            defaults[action.dest] = _convert(action, value, name)
    for var, declarer in declared.items():  # any name, a locustfile's options' too
        if var in environ:
            defaults[declarer.dest] = _convert(declarer, environ[var], var)
    if "LOCUST_USER_CLASSES" in environ:
        defaults["user_classes"] = environ["LOCUST_USER_CLASSES"].split()
    parser.set_defaults(**defaults)


def _convert(action: argparse.Action, value: Any, key: str) -> Any:
    if isinstance(value, bool) or action.nargs == 0:  # store_true flags
        text = str(value).lower()
        if text not in TRUE | FALSE:
            raise ConfigError(f"setting '{key}' must be true or false, not '{value}'")
        return text in TRUE
    if action.nargs in ("*", "+"):
        return value if isinstance(value, list) else [v for v in str(value).replace(",", " ").split() if v]
    if isinstance(action, argparse._AppendAction):  # repeatable (--threshold): a TOML list, or ';' between
        items = value if isinstance(value, list) else str(value).split(";")
        return [str(v).strip() for v in items if str(v).strip()]
    return action.type(value) if callable(action.type) else str(value)

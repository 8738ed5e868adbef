"""Locust's configuration sources, lowest precedence first: ~/.locust.conf, `[tool.locust]` in
./pyproject.toml, ./locust.conf, `--config FILE`, then `LOCUST_*` environment variables; the command
line beats them all. They become the run parser's defaults.

Config files hold `key = value` lines (Locust's long option names: `users = 10`, `spawn-rate = 2`,
`headless = true`); `[tool.locust]` holds the same keys in TOML.

A file that cannot serve is a ConfigError, one line naming the file (exit 2, before the run): not UTF-8
text (compressed, UTF-16: squall.inputs says which), TOML that does not parse or nests too deep,
`tool` or `tool.locust` that is not a table, a value that is a table or nests where one value is wanted,
a value its option refuses (the option's own converter, its choices, a threshold that does not parse):
each names the file (or the LOCUST_* variable) the setting came from. A TOML value is given to the
option as the text a conf file would hold (`10`, `2.5`, `true`), so both kinds of file convert alike."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Callable

from squall import durations, inputs, load_values
from squall.errors import UsageError

TRUE = {"1", "true", "yes", "on"}
FALSE = {"0", "false", "no", "off", ""}


class ConfigError(Exception):
    pass


def _text(path: str | Path) -> str:
    try:
        return inputs.read_text(str(path), "a config file")
    except inputs.InputError as e:
        raise ConfigError(str(e)) from None


def _read_conf(path: str | Path) -> dict[str, str]:
    values = {}
    for n, line in enumerate(_text(path).splitlines(), 1):
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
        import tomllib  # (start-up: 8 ms to import, and only a pyproject.toml needs it)

        text = _text(path)
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise ConfigError(f"{path}: {e}") from None
        except (ValueError, RecursionError) as e:  # a number past Python's digit limit; arrays nested 1,000 deep
            raise ConfigError(
                f"{path}: not TOML squall can read ({str(e).splitlines()[0] or type(e).__name__})"
            ) from None
        tool = data.get("tool", {})
        section = tool.get("locust", {}) if isinstance(tool, dict) else None
        if not isinstance(section, dict):
            raise ConfigError(f"{path}: [tool.locust] is not a table of settings")
        if inputs.depth(section) > 3:  # a setting's value is one value, or a list of them
            raise ConfigError(f"{path}: [tool.locust] nests deeper than settings do")
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
) -> tuple[dict[str, Any], dict[str, str], dict[str, tuple[str, str]]]:
    """(the config files' settings, the LOCUST_* environment variables, the file each setting came
    from and its key as the file spells it), each later file winning."""
    merged: dict[str, Any] = {}
    origins: dict[str, tuple[str, str]] = {}

    def read(source: str | Path) -> None:
        values = _read_pyproject(source) if str(source).endswith(".toml") else _read_conf(source)
        for spelled, value in values.items():
            key = spelled.replace("-", "_").lower()
            merged[key], origins[key] = value, (str(source), spelled)

    home_conf = Path(home or Path.home()) / ".locust.conf"
    for source in (home_conf, Path(cwd) / "pyproject.toml", Path(cwd) / "locust.conf"):
        if source.is_file():
            read(source)
    explicit = _config_arg(argv)
    if explicit:
        if not os.path.isfile(explicit):  # (pathlib's is_file raises on a name too long: ENAMETOOLONG)
            raise ConfigError(f"config file '{explicit}' not found")
        read(explicit)
    return merged, {k: v for k, v in environ.items() if k.startswith("LOCUST_")}, origins


def gather(
    argv: Sequence[str],
    environ: Mapping[str, str] | None = None,
    home: str | Path | None = None,
    cwd: str | Path = ".",
) -> dict[str, Any]:
    """(key -> raw value) from every source but the command line, later sources winning. Values are
    text, or what TOML holds for `[tool.locust]` keys (numbers, booleans, lists). An environment
    variable LOCUST_NAME gives the key `name`."""
    files, env, _ = _sources(argv, os.environ if environ is None else environ, home, cwd)
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
    files, env, origins = _sources(argv, environ, None, ".")
    actions = {a.dest: a for a in parser._actions if a.option_strings}
    declared: dict[str, argparse.Action] = {a.env_var: a for a in parser._actions if getattr(a, "env_var", None)}  # type: ignore[attr-defined]
    defaults = {}
    for key, value in files.items():
        if key in ("config", "locustfile_path"):
            continue
        action = actions.get(key)
        source, spelled = origins[key]
        if action is None:
            if warn:
                sys.stderr.write(f"squall: warning: {source}: ignoring unknown setting '{spelled}'\n")
            continue
        defaults[action.dest] = _convert(action, value, spelled, source)
    for name, value in env.items():  # LOCUST_NAME sets the option NAME, unless one declares it
        action = actions.get(name[len("LOCUST_") :].lower())
        if action is not None and name not in declared:
            defaults[action.dest] = _convert(action, value, name, "the environment")
    for var, declarer in declared.items():  # any name, a locustfile's options' too
        if var in environ:
            defaults[declarer.dest] = _convert(declarer, environ[var], var, "the environment")
    if "LOCUST_USER_CLASSES" in environ:
        defaults["user_classes"] = environ["LOCUST_USER_CLASSES"].split()
    parser.set_defaults(**defaults)


def _convert(action: argparse.Action, value: Any, key: str, origin: str) -> Any:
    """`value` as option `action` takes it; a ConfigError naming `origin` (a file, or the environment)
    if the option refuses it."""
    try:
        converted = _converted(action, value, key)
        check = _LATE.get(action.dest)
        if check is not None:
            check(converted)
    except ConfigError as e:
        raise ConfigError(f"{origin}: {e}") from None
    except (ValueError, UsageError) as e:
        raise ConfigError(f"{origin}: setting '{key}': {e}") from None
    return converted


def _thresholds(texts: list[str]) -> None:
    from squall import thresholds  # (start-up: only a config file that sets thresholds loads them)

    thresholds.parse_all(texts)


# Options whose values the run reads when it starts (the command's own checks, with the same words),
# checked here too, where the file a value came from is known: "locust.conf: setting 'users': ...".
_LATE: dict[str, Callable[[Any], object]] = {
    "threshold": _thresholds,
    "users": lambda text: None if text is None else load_values.users(text),
    "spawn_rate": load_values.spawn_rate,
    "run_time": lambda text: None if not text else durations.parse_duration(text),
    "threshold_grace": lambda text: durations.parse_duration(text, zero=True),
}


def _converted(action: argparse.Action, value: Any, key: str) -> Any:
    if action.nargs == 0:  # store_true flags (a TOML boolean for another option is its text, "true")
        text = str(value).lower()
        if text not in TRUE | FALSE:
            raise ConfigError(f"setting '{key}' must be true or false, not {_shown(value)}")
        return text in TRUE
    if action.nargs in ("*", "+"):
        items = value if isinstance(value, list) else [v for v in _as_text(value, key).replace(",", " ").split() if v]
        return [_as_text(v, key) for v in items]
    if isinstance(action, argparse._AppendAction):  # repeatable (--threshold): a TOML list, or ';' between
        items = value if isinstance(value, list) else _as_text(value, key).split(";")
        return [t for t in (_as_text(v, key).strip() for v in items) if t]
    text = _as_text(value, key)
    if not callable(action.type):
        converted: Any = text
    else:
        try:
            converted = action.type(text)
        except (ValueError, TypeError, OverflowError, argparse.ArgumentTypeError) as e:
            reason = str(e).splitlines()[0] if str(e) else ""
            raise ConfigError(
                f"setting '{key}': invalid value {_shown(value)}{': ' + reason if reason else ''}"
            ) from None
    if action.choices is not None and converted not in action.choices:
        choices = ", ".join(map(str, action.choices))
        raise ConfigError(f"setting '{key}': {_shown(value)} is not one of {choices}")
    return converted


def _as_text(value: Any, key: str) -> str:
    """A setting's value as the text a conf file would hold (TOML's numbers and booleans too)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    kind = "a table" if isinstance(value, dict) else "a list" if isinstance(value, list) else type(value).__name__
    raise ConfigError(f"setting '{key}' must be a value, not {kind} ({_shown(value)})")


def _shown(value: Any) -> str:
    """A value as an error line quotes it: printable, short."""
    text = repr(value) if not isinstance(value, str) else "'" + value.encode("unicode_escape").decode("ascii") + "'"
    return text if len(text) <= 60 else text[:57] + "..."

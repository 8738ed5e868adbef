"""Finding and importing the locustfiles of `-f`, by Locust's rules (`locust.argument_parser`'s
`parse_locustfile_paths`, `locust.main.merge_locustfiles_content`, `locust.util.load_locustfile`).

Policy: `-f` takes comma-separated entries; each is a directory (every `.py` file under it, at any
depth, except those whose name starts with `_`), a `.py` file, or, as older Locust did and its help
still says, a module: `api` for `api.py`, `locustfiles.api` for `locustfiles/api.py` or anything
importable under that name. Each file is imported as a module named after it (`locustfile` for one
named `locust.py`, which would shadow the package), registered in `sys.modules` with its directory
first on `sys.path`, as Locust does. User classes are the non-abstract `User` subclasses in a file's
namespace; the same class imported by two files counts once, two different classes of the same name
are an error. The first shape class found is the run's. A problem is a `ScriptError`: the command
line reports it on one line and exits 2."""

from __future__ import annotations

import importlib.util
import inspect
import os
import sys
import traceback
from typing import TYPE_CHECKING

from squall.shape import LoadTestShape
from squall.user.users import User

if TYPE_CHECKING:
    from types import ModuleType


class ScriptError(Exception):
    """The locustfile cannot run: reported as `file:line: message`, exit code 2."""


def paths(spec: str) -> list[str]:
    """The locustfiles `-f SPEC` names, as absolute paths (see the module's policy)."""
    out: list[str] = []
    for entry in (e.strip() for e in spec.split(",")):
        if not entry:
            continue
        if os.path.isdir(entry):
            found = sorted(
                os.path.abspath(os.path.join(root, f))
                for root, _dirs, files in os.walk(entry)
                for f in files
                if f.endswith(".py") and not f.startswith("_")
            )
            if not found:
                raise ScriptError(f"no locustfile found in directory '{entry}'")
            out.extend(found)
        elif entry.endswith(".py") and os.path.isfile(entry):
            out.append(os.path.abspath(entry))
        else:
            out.append(_module_path(entry))
    if not out:
        raise ScriptError("no locustfile given")
    return out


def _module_path(entry: str) -> str:
    """The file of a module named on `-f` (`api`, `locustfiles.api`)."""
    missing = ScriptError(f"locustfile '{entry}' not found (a .py file, a directory of them, or a module)")
    if entry.endswith(".py") or not entry.replace(".", "").replace("_", "").isalnum():
        if os.path.isfile(entry + ".py"):  # `-f path/to/api`
            return os.path.abspath(entry + ".py")
        raise missing
    as_file = entry.replace(".", os.sep) + ".py"
    if os.path.isfile(as_file):
        return os.path.abspath(as_file)
    sys.path.insert(0, os.getcwd())
    try:
        spec = importlib.util.find_spec(entry)
    except (ImportError, ValueError):
        spec = None
    finally:
        sys.path.pop(0)
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        raise missing
    return spec.origin


def _location(exc: BaseException, path: str) -> str:
    """The line of the locustfile an exception came from."""
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        if os.path.abspath(frame.filename) == os.path.abspath(path):
            return f"{path}:{frame.lineno}"
    return path


def import_file(path: str) -> ModuleType:
    """Imports one locustfile as Locust does (its directory first on sys.path while it imports)."""
    directory, name = os.path.split(path)
    module_name = os.path.splitext(name)[0]
    if module_name == "locust":
        module_name = "locustfile"  # would shadow the package
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    if directory in sys.path:
        sys.path.remove(directory)
    sys.path.insert(0, directory)
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ScriptError(f"{path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except SyntaxError as e:
        raise ScriptError(f"{e.filename}:{e.lineno}: syntax error: {e.msg}") from None
    except Exception as e:
        raise ScriptError(f"{_location(e, path)}: {type(e).__name__}: {e}") from None
    return module


def _is_user_class(v: object) -> bool:
    return isinstance(v, type) and issubclass(v, User) and not v.__dict__.get("abstract", False)


def _is_shape_class(v: object) -> bool:
    return (
        isinstance(v, type)
        and issubclass(v, LoadTestShape)
        and v is not LoadTestShape
        and not v.__dict__.get("abstract", False)
    )


def load(spec: str) -> tuple[list[type[User]], type[LoadTestShape] | None]:
    """Imports the locustfiles of `-f SPEC`; returns (User classes, the shape class or None)."""
    users: dict[str, type[User]] = {}
    shapes: dict[str, type[LoadTestShape]] = {}
    files = paths(spec)
    modules = []
    for path in files:
        module = import_file(path)
        modules.append(module)
        for kind, found, test in (("user class", users, _is_user_class), ("shape class", shapes, _is_shape_class)):
            for value in vars(module).values():
                if not test(value):
                    continue
                name = value.__name__
                previous = found.get(name)
                if previous is not None and previous is not value:
                    if _file(previous) != _file(value):
                        raise ScriptError(
                            f"duplicate {kind} names: {name} is defined in both {_file(previous)} and {_file(value)}"
                        )
                    continue
                found.setdefault(name, value)
    if not users:  # as Locust: only then are the files read as pytest-style ones (test functions)
        users = _pytest_users(files, modules)
    return list(users.values()), next(iter(shapes.values()), None)


def _pytest_users(files: list[str], modules: list[ModuleType]) -> dict[str, type[User]]:
    """The User classes of pytest-style locustfiles (squall.pytest_style): one per test function."""
    tests = any(name.startswith("test") and inspect.isfunction(v) for m in modules for name, v in vars(m).items())
    if not tests:
        return {}
    # For start-up: pytest-style files are rare, and their loader brings pytest in.
    from squall import pytest_style

    users: dict[str, type[User]] = {}
    for path in files:
        try:
            found = pytest_style.load(path)
        except ImportError:
            raise ScriptError(f"{path}: a pytest-style locustfile needs pytest: pip install pytest") from None
        except ValueError as e:
            raise ScriptError(f"{path}: {e}") from None
        for name, cls in found.items():
            if name in users:
                raise ScriptError(f"duplicate user class names: {name} is defined in two files")
            users[name] = cls
    return users


def _file(cls: type) -> str:
    try:
        return inspect.getfile(cls)
    except TypeError:
        return "?"

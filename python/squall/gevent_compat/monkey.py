"""`gevent.monkey`: under squall there is nothing to patch, so each `patch_*` does nothing and returns
what gevent's returns (`patch_all` True, the others None).

Locust's workers patch the standard library so that blocking I/O yields to other greenlets. squall's
users make their requests in the engine, and `time.sleep` is already cooperative while a locustfile
runs; other blocking calls (a raw socket, a database driver) block every user under squall, patched or
not, so a locustfile's `monkey.patch_all()` is accepted and changes nothing. The query functions answer
truthfully: nothing is patched."""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "MonkeyPatchWarning",
    "get_original",
    "is_anything_patched",
    "is_module_patched",
    "is_object_patched",
    "patch_all",
    "patch_builtins",
    "patch_dns",
    "patch_module",
    "patch_os",
    "patch_queue",
    "patch_select",
    "patch_signal",
    "patch_socket",
    "patch_ssl",
    "patch_subprocess",
    "patch_sys",
    "patch_thread",
    "patch_time",
]

saved: dict[str, dict[str, Any]] = {}


class MonkeyPatchWarning(RuntimeWarning):
    pass


def patch_all(*_args: Any, **_kwargs: Any) -> bool:
    return True


def _nothing(*_args: Any, **_kwargs: Any) -> None:
    return None


patch_builtins = patch_dns = patch_os = patch_queue = patch_select = patch_selectors = _nothing
patch_signal = patch_socket = patch_ssl = patch_subprocess = patch_sys = patch_thread = patch_time = _nothing
patch_contextvars = _nothing


def patch_module(*_args: Any, **_kwargs: Any) -> bool:
    return False


def is_module_patched(mod_name: str) -> bool:
    return False


def is_object_patched(mod_name: str, item_name: str) -> bool:
    return False


def is_anything_patched() -> bool:
    return False


def get_original(mod_name: str, item_name: str | list[str] | tuple[str, ...]) -> Any:
    """The standard library's own `item_name` of `mod_name` (they are never replaced here)."""
    module = importlib.import_module(mod_name)
    if isinstance(item_name, str):
        return getattr(module, item_name)
    return [getattr(module, name) for name in item_name]

"""Ray's token authentication, decided one way for every Ray process squall starts or connects from.

Ray 2.60 decides it in several places, each its own way: `ray.init()` starting a local cluster turns
token authentication on and, with no token at hand, writes a new one to ~/.ray/auth_token, where it
stays; `ray start --head` turns it on when it finds a token there; `ray start --address` and
`ray.init(address=...)` send one only when RAY_AUTH_MODE=token says so. So one `--ray local` run left
a token behind, the next `--master` opened its head with it, and the master's own driver and its
`--worker` nodes, never told to send it, were refused (Ray's InvalidAuthToken, which squall reported as
"cannot reach the Ray cluster"): a run left state that changed the next one.

squall's rules:

- RAY_AUTH_MODE, when the user sets it, is left as it is.
- A cluster squall opens (`--master`'s head, the tests' and bench's clusters) requires a token when
  one is at hand (RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH, ~/.ray/auth_token: Ray's own rule for `ray start
  --head`), and the mode is given explicitly to every node squall starts in it, so none decides alone.
- A process that joins a cluster (the driver of `--ray HOST:PORT`, `--ray auto` and `--master`, a
  `--worker`'s node) first asks its GCS, without a token, and takes the mode it finds: a node of
  another mode is refused, or refuses the others. A cluster that wants a token this machine does not
  have, or has another, is one line that says so (InvalidAuthToken, Ray's name for it) and how to fix
  it: exit 3, at once, instead of Ray's retries with a warning each second.
- `--ray local` gets a token of its own for the run when none is at hand, in the environment of the
  cluster it starts (RAY_AUTH_TOKEN): authenticated as Ray wants, and nothing written to ~/.ray. Its
  session directory is a temporary one, removed with the cluster (squall.distributed.cluster)."""

from __future__ import annotations

import contextlib
import os
import secrets
import sys
from collections.abc import Iterator, Mapping, MutableMapping
from pathlib import Path
from types import ModuleType

MODE = "RAY_AUTH_MODE"
TOKEN = "RAY_AUTH_TOKEN"
TOKEN_PATH = "RAY_AUTH_TOKEN_PATH"
REFUSED = "InvalidAuthToken"  # what Ray says, in its logs and exceptions, of a missing or wrong token
FIX = "copy the head's ~/.ray/auth_token to this machine's ~/.ray/auth_token or set RAY_AUTH_TOKEN to it"


class AuthError(Exception):
    """The cluster refuses this machine's authentication (one line, with the fix)."""


TOKEN_FILE_MAX = 64 * 1024  # bytes of a token file read to see that it holds one


def token_at_hand(environ: Mapping[str, str] | None = None) -> str | None:
    """Where this machine's Ray token is (RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH, ~/.ray/auth_token, in
    Ray's order), or None."""
    environ = os.environ if environ is None else environ
    if environ.get(TOKEN, "").strip():
        return TOKEN
    home = environ.get("HOME") or str(Path.home())
    for path in (environ.get(TOKEN_PATH), os.path.join(home, ".ray", "auth_token")):
        if path and _holds_token(path):
            return path
    return None


def _holds_token(path: str) -> bool:
    """Whether the file at `path` holds a token (text not blank), reading at most TOKEN_FILE_MAX bytes of
    it (a file without end, /dev/zero, is not read to its end)."""
    try:
        with open(path, "rb") as f:
            return bool(f.read(TOKEN_FILE_MAX).decode().strip())
    except (OSError, UnicodeDecodeError):
        return False


def head_mode(environ: Mapping[str, str] | None = None) -> str:
    """The mode of a cluster squall opens: the user's RAY_AUTH_MODE, else token when one is at hand."""
    environ = os.environ if environ is None else environ
    return environ.get(MODE) or ("token" if token_at_hand(environ) else "disabled")


def local_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """What `--ray local` adds to its environment: token mode (Ray's default for a local cluster) and,
    with no token at hand, one of the run's own, so that Ray writes none to ~/.ray."""
    environ = os.environ if environ is None else environ
    mode = environ.get(MODE) or "token"
    if mode.lower() != "token" or token_at_hand(environ):
        return {MODE: mode}
    return {MODE: mode, TOKEN: secrets.token_hex(32)}


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
    """Ray's C++ client logs each refused attempt on file descriptor 2: kept off the console while
    squall asks (no thread of squall's writes there then, and no process is started)."""
    sys.stderr.flush()
    saved = os.dup(2)
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(null)


def _set_mode(ray: ModuleType, mode: str, environ: MutableMapping[str, str]) -> None:
    """This process's mode, for the clients Ray makes from now on (as Ray's own token setup does it)."""
    environ[MODE] = mode
    if environ is os.environ:
        ray._raylet.Config.initialize("")


def _refuses(ray: ModuleType, address: str) -> bool | None:
    """Whether the GCS at `address` refuses this process's authentication (None: no answer either way,
    left to Ray's own connection, which reports it)."""
    try:
        with _quiet_stderr():
            ray._raylet.GcsClient(address=address)
    except ray.exceptions.AuthenticationError:
        return True
    except Exception:  # unreachable, another version: what Ray itself then says is the error
        return None
    return False


def join(ray: ModuleType, address: str, environ: MutableMapping[str, str] | None = None) -> str:
    """Sets this process's mode to the cluster's at `address` (a reachable HOST:PORT of its GCS) and
    returns it; AuthError when the cluster wants a token this machine does not have or has wrong.
    The user's RAY_AUTH_MODE is kept."""
    environ = os.environ if environ is None else environ
    chosen = environ.get(MODE)
    _set_mode(ray, "disabled", environ)  # first without a token: does the cluster want one?
    refused = _refuses(ray, address)
    if refused is None or not refused:
        mode = chosen or ("disabled" if refused is False else head_mode(environ))
        _set_mode(ray, mode, environ)
        return mode
    if chosen and chosen.lower() != "token":
        _set_mode(ray, chosen, environ)
        raise AuthError(
            f"the Ray cluster at {address} requires a token (Ray's {REFUSED}) and RAY_AUTH_MODE is '{chosen}' "
            f"here: set RAY_AUTH_MODE=token and {FIX}"
        )
    _set_mode(ray, "token", environ)
    where = token_at_hand(environ)
    if where is None:
        raise AuthError(
            f"the Ray cluster at {address} requires a token (Ray's {REFUSED}) and this machine has none: "
            f"{FIX} (or start the head with RAY_AUTH_MODE=disabled)"
        )
    if _refuses(ray, address):
        shown = "RAY_AUTH_TOKEN" if where == TOKEN else where.replace(environ.get("HOME") or "//", "~", 1)
        raise AuthError(
            f"the Ray cluster at {address} refused this machine's token (Ray's {REFUSED}): {shown} holds "
            f"another cluster's; {FIX}"
        )
    return "token"


def refused(text: str) -> bool:
    """Whether Ray's words (an exception, `ray start`'s output) say the cluster refused the token."""
    return REFUSED in text


def refused_line(address: str) -> str:
    """The line for a refusal seen only in Ray's words (after `join` agreed with the cluster)."""
    return f"the Ray cluster at {address} refused this machine's authentication (Ray's {REFUSED}): {FIX}"

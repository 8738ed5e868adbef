"""The documents an importer reads: a file or an http(s) URL, JSON or YAML, checked before any of it is used.

The policy, and why:

- A source is a path or an `http://`/`https://` URL; anything else that looks like a URL (`ftp:`,
  `file:`) is refused, so that a typo never reads something unexpected. A URL is fetched once, with a
  timeout (`TIMEOUT`), following redirects as urllib does; an answer other than 2xx, a name that does
  not resolve or a refused connection is one line naming the URL and the reason.
- At most `MAX_BYTES` are read (the largest public OpenAPI documents, GitHub's and Stripe's, are 10-12
  MB of JSON); past it the source is refused, not truncated.
- Text is UTF-8 (squall.inputs: compressed files, UTF-16 and other bytes are named for what they are).
  JSON is read as JSON when the text starts as JSON does (its errors are the clearer, a cut-off file
  is said to be one); anything else as YAML (PyYAML, its C parser when built with it: 20x faster on a
  large document), with timestamps kept as the strings they are written as (a `date` example stays
  "2024-01-01") and keys as strings (`200:` is the response "200").
- What YAML allows and a JSON document cannot be is refused in one line: nesting past `MAX_DEPTH`, a
  structure that contains itself (an anchor used inside itself), and aliases that expand past
  `MAX_NODES` values (the "billion laughs"), measured without expanding them.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any, ClassVar

from squall import __version__, inputs

MAX_BYTES = 64 * 1024 * 1024
MAX_DEPTH = 256  # levels of nesting; OpenAPI documents in the wild nest fewer than 40
MAX_NODES = 5_000_000  # values, aliases expanded; a 12 MB document holds about 1.2 million
TIMEOUT = 30.0  # seconds to fetch a URL


class SourceError(ValueError):
    """A document that cannot be read, in one line that names it."""


@dataclass
class Source:
    """A document as read: its parsed value, where it came from (an absolute path or a URL, against
    which what it refers to is read), and whether it was JSON or YAML."""

    value: Any
    location: str
    syntax: str  # "JSON" or "YAML"


def dict_at(node: Any, key: str) -> dict[str, Any]:
    """`node[key]` if `node` is a mapping and that is a mapping, else {}: a document's optional parts."""
    value = node.get(key) if isinstance(node, dict) else None
    return value if isinstance(value, dict) else {}


def list_at(node: Any, key: str) -> list[Any]:
    """`node[key]` if `node` is a mapping and that is a list, else []."""
    value = node.get(key) if isinstance(node, dict) else None
    return value if isinstance(value, list) else []


def is_url(location: str) -> bool:
    return location.startswith(("http://", "https://"))


def read(location: str) -> Source:
    """The document at `location` (a path or an http(s) URL), parsed."""
    if "://" in location[:12] and not is_url(location):
        raise SourceError(f"{location}: only files and http(s) URLs can be read")
    data = fetch(location) if is_url(location) else _read_file(location)
    try:
        text = inputs.decode(data, location, "squall import")
    except inputs.InputError as e:
        raise SourceError(str(e)) from None
    where = location if is_url(location) else os.path.abspath(location)
    value, syntax = parse(text, location)
    return Source(value, where, syntax)


def _read_file(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_BYTES + 1)
    except IsADirectoryError:
        raise SourceError(f"{path} is a directory, not a document") from None
    except (OSError, ValueError) as e:  # ValueError: a NUL in the path
        raise SourceError(f"cannot read {path!r}: {getattr(e, 'strerror', None) or e}") from None
    if len(data) > MAX_BYTES:
        raise SourceError(f"{path} is larger than {MAX_BYTES // (1024 * 1024)} MB")
    return data


def fetch(url: str) -> bytes:
    """The body at `url`, or SourceError saying why not."""
    import urllib.error  # (20-30 ms of imports, http.client's and ssl's, that a file does not need)
    import urllib.request

    request = urllib.request.Request(
        url,
        headers={
            "User-Agent": f"squall/{__version__}",
            "Accept": "application/json, application/yaml;q=0.9, */*;q=0.5",
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
            data: bytes = response.read(MAX_BYTES + 1)
    except urllib.error.HTTPError as e:
        raise SourceError(f"cannot fetch {url}: HTTP {e.code} {e.reason}") from None
    except urllib.error.URLError as e:
        raise SourceError(f"cannot fetch {url}: {getattr(e.reason, 'strerror', None) or e.reason}") from None
    except (OSError, ValueError) as e:  # timeouts, resets, a malformed URL (http://[::1)
        raise SourceError(f"cannot fetch {url}: {e}") from None
    if len(data) > MAX_BYTES:
        raise SourceError(f"{url} is larger than {MAX_BYTES // (1024 * 1024)} MB")
    return data


def parse(text: str, name: str) -> tuple[Any, str]:
    """(the document, "JSON" or "YAML"): JSON if it starts as JSON does, else YAML."""
    if text.lstrip()[:1] in ("{", "["):
        try:
            value = json.loads(text)
        except json.JSONDecodeError as e:
            if e.pos >= len(text.rstrip()) or e.msg.startswith("Unterminated string"):
                raise SourceError(f"{name} ends before its JSON does (at line {e.lineno}): a truncated copy?") from None
            raise SourceError(f"{name} is not JSON: {e.msg} at line {e.lineno}, column {e.colno}") from None
        except RecursionError:
            raise SourceError(f"{name} nests deeper than {MAX_DEPTH} levels") from None
        except ValueError as e:  # an integer past Python's digit limit
            raise SourceError(f"{name} is not JSON squall can read: {str(e).splitlines()[0]}") from None
        return checked(value, name), "JSON"
    return checked(_yaml(text, name), name), "YAML"


def _yaml(text: str, name: str) -> Any:
    import yaml  # (start-up: only a YAML document needs it, and it is 10 ms to import)

    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class Loader(base):  # type: ignore[valid-type,misc]
        """YAML's safe subset, with timestamps left as strings (as JSON would have them)."""

        yaml_implicit_resolvers: ClassVar[dict[str, list[tuple[str, Any]]]] = {
            first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
            for first, resolvers in base.yaml_implicit_resolvers.items()
        }

    try:
        return yaml.load(text, Loader=Loader)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = e.problem or e.context or "not YAML"
        raise SourceError(f"{name} is neither JSON nor YAML: {problem}{where}") from None
    except yaml.YAMLError as e:
        raise SourceError(f"{name} is neither JSON nor YAML: {str(e).splitlines()[0]}") from None
    except RecursionError:
        raise SourceError(f"{name} nests deeper than {MAX_DEPTH} levels") from None


def checked(value: Any, name: str) -> Any:
    """`value` with every mapping's keys as strings, after checking its depth, that it does not contain
    itself, and its size with aliases expanded; walked without recursion, each shared value once."""
    sizes: dict[int, int] = {}  # id -> values under it, aliases expanded
    open_: set[int] = set()
    stack: list[tuple[Any, int, bool]] = [(value, 1, False)]
    while stack:
        node, level, done = stack.pop()
        if not isinstance(node, (dict, list)):
            continue
        key = id(node)
        if done:
            open_.discard(key)
            children = node.values() if isinstance(node, dict) else node
            size = 1 + sum(sizes.get(id(c), 1) for c in children)
            if size > MAX_NODES:
                raise SourceError(f"{name} expands to more than {MAX_NODES:,} values (YAML aliases)")
            sizes[key] = size
            if isinstance(node, dict) and any(not isinstance(k, str) for k in node):
                fixed = {_key(k): v for k, v in node.items()}
                node.clear()
                node.update(fixed)
            continue
        if key in open_:
            raise SourceError(f"{name} contains itself (a YAML anchor used inside itself)")
        if key in sizes:
            continue
        if level > MAX_DEPTH:
            raise SourceError(f"{name} nests deeper than {MAX_DEPTH} levels")
        open_.add(key)
        stack.append((node, level, True))
        children = list(node.values()) if isinstance(node, dict) else node
        stack.extend((c, level + 1, False) for c in children)
    return value


def _key(key: Any) -> str:
    if isinstance(key, bool):
        return "true" if key else "false"
    if key is None:
        return "null"
    return str(key)

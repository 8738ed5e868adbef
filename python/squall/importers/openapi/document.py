"""An OpenAPI document as the importer reads it: its version, its `$ref`s followed, its servers.

The policy, and why:

- Versions: Swagger 2.0 (`swagger: "2.0"`), OpenAPI 3.0.x and 3.1.x (`openapi:`). Anything else is
  refused by name (Swagger 1.2, an OpenAPI 4 draft, a HAR file or a Postman collection handed to the
  wrong importer), since reading a document of another shape as this one would produce nonsense.
- `$ref`: a JSON pointer in the same document (`#/components/schemas/Pet`), another file or URL
  relative to the one that refers to it (`common.yaml#/Error`, `../schemas/pet.json`), each document
  read once (squall.importers.sources, its limits) and at most `MAX_DOCUMENTS` of them. A `$ref` that
  points nowhere, to a file that cannot be read, or round in a circle of `$ref`s only, is an error of
  the document (`RefError`, exit 2 from the command), said with the `$ref` as written: the file is
  wrong and the user fixes it; a load test built around a hole would mislead.
- Servers: the first of `servers` (3.x) or `schemes`/`host`/`basePath` (2.0), with its variables'
  defaults, resolved against the document's own URL when it is relative (a document fetched from
  `http://127.0.0.1:8000/openapi.json` whose server is `/v3` serves at `http://127.0.0.1:8000/v3`);
  split into the origin (the user's `host`, which `-H` replaces) and the base path that every request
  path starts with.
"""

from __future__ import annotations

import os
import re
from typing import Any
from urllib.parse import unquote, urljoin, urlsplit

from squall.importers import sources
from squall.importers.sources import dict_at, list_at

MAX_DOCUMENTS = 100  # documents one import may read through $refs
METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


class RefError(sources.SourceError):
    """A $ref the document cannot be read through."""


class Document:
    """The root document (`source`) and the others its `$ref`s reach."""

    def __init__(self, source: sources.Source) -> None:
        self.root: dict[str, Any] = source.value
        self.location = source.location
        self.syntax = source.syntax
        self.version = version(self.root, source.location)
        self._documents: dict[str, Any] = {source.location: source.value}

    @property
    def swagger2(self) -> bool:
        return self.version.startswith("2")

    @property
    def openapi30(self) -> bool:
        return self.version.startswith(("2", "3.0"))

    def resolve(self, node: dict[str, Any], base: str) -> tuple[Any, str]:
        """What the `$ref` of `node` (read in the document at `base`) points to, and that document's location."""
        ref = node.get("$ref")
        if not isinstance(ref, str):
            raise RefError(f"$ref {ref!r} is not a reference")
        address, _, pointer = ref.partition("#")
        location = base if not address else _joined(base, unquote(address))
        document = self._document(location, ref)
        return _pointed(document, unquote(pointer), ref), location

    def follow(self, node: Any, base: str) -> tuple[Any, str]:
        """`node` with its `$ref` chain followed (a parameter, a response, a request body...)."""
        for _ in range(64):
            if not isinstance(node, dict) or "$ref" not in node:
                return node, base
            node, base = self.resolve(node, base)
        raise RefError("a circle of $refs that never reaches a value")

    def _document(self, location: str, ref: str) -> Any:
        if location not in self._documents:
            if len(self._documents) >= MAX_DOCUMENTS:
                raise RefError(f"$ref {ref!r}: more than {MAX_DOCUMENTS} documents referred to")
            try:
                self._documents[location] = sources.read(location).value
            except sources.SourceError as e:
                raise RefError(f"$ref {ref!r}: {e}") from None
        return self._documents[location]

    def server(self) -> tuple[str | None, str, str]:
        """(origin or None, base path, where it came from) of the document's first server."""
        if self.swagger2:
            return self._swagger2_server()
        servers = self.root.get("servers")
        first = servers[0] if isinstance(servers, list) and servers and isinstance(servers[0], dict) else {}
        url = server_url(first) if first else "/"
        said = f"servers[0] {first.get('url')!r}" if first else "no servers: the document's own location"
        return (*_split(url, self.location), said)

    def _swagger2_server(self) -> tuple[str | None, str, str]:
        host = self.root.get("host")
        base_path = self.root.get("basePath") if isinstance(self.root.get("basePath"), str) else ""
        schemes = list_at(self.root, "schemes")
        scheme = "https" if "https" in schemes else schemes[0] if schemes and isinstance(schemes[0], str) else None
        if isinstance(host, str) and host:
            if scheme is None:
                scheme = "https" if not sources.is_url(self.location) else urlsplit(self.location).scheme
            url = f"{scheme}://{host}{base_path}"
            return (*_split(url, self.location), f"host {host!r}, basePath {base_path or '/'!r}")
        return (*_split(base_path or "/", self.location), f"basePath {base_path or '/'!r} (no host)")


def version(root: Any, name: str) -> str:
    """The document's OpenAPI version ("2.0", "3.0.3", "3.1.0"), or SourceError saying what it is instead."""
    if not isinstance(root, dict):
        kind = {list: "a list", type(None): "empty", str: "text"}.get(type(root), f"a {type(root).__name__}")
        raise sources.SourceError(f"{name} is not an OpenAPI document (its top level is {kind}, not an object)")
    if "openapi" in root:
        text = str(root["openapi"])
        if re.fullmatch(r"3\.[01](\.\d+)?(-[\w.]+)?", text):
            return text if text.count(".") >= 1 else f"{text}.0"
        raise sources.SourceError(f"{name} is OpenAPI {text}: squall imports OpenAPI 3.0 and 3.1, and Swagger 2.0")
    if "swagger" in root:
        text = str(root["swagger"])
        if text in ("2.0", "2"):
            return "2.0"
        raise sources.SourceError(f"{name} is Swagger {text}: squall imports Swagger 2.0, and OpenAPI 3.0 and 3.1")
    if "swaggerVersion" in root:
        raise sources.SourceError(f"{name} is Swagger {root['swaggerVersion']}: convert it to OpenAPI 3 first")
    if isinstance(root.get("log"), dict) and "entries" in root["log"]:
        raise sources.SourceError(f"{name} is a HAR file, not an OpenAPI document")
    if (isinstance(root.get("info"), dict) and "_postman_id" in root["info"]) or "item" in root:
        raise sources.SourceError(f"{name} is a Postman collection, not an OpenAPI document")
    raise sources.SourceError(f"{name} is not an OpenAPI document (no 'openapi' or 'swagger' field)")


def server_url(server: dict[str, Any]) -> str:
    """A server's URL with its variables' defaults put in."""
    url = server.get("url") if isinstance(server.get("url"), str) else "/"
    variables = dict_at(server, "variables")

    def value(match: re.Match[str]) -> str:
        variable = variables.get(match.group(1))
        if isinstance(variable, dict) and "default" in variable:
            return str(variable["default"])
        return match.group(0)

    return re.sub(r"\{([^{}]+)\}", value, str(url))


def _split(url: str, location: str) -> tuple[str | None, str]:
    """(origin, path) of a server URL; a relative one is read against the document's URL, and has no
    origin when the document is a file (the run's -H gives it)."""
    if sources.is_url(location):
        url = urljoin(location, url)
    parts = urlsplit(url)
    if parts.scheme in ("http", "https") and parts.netloc:
        return f"{parts.scheme}://{parts.netloc}", parts.path.rstrip("/")
    return None, (parts.path if url.startswith("/") else "/" + parts.path).rstrip("/")


def _joined(base: str, address: str) -> str:
    if sources.is_url(base) or sources.is_url(address):
        return urljoin(base, address)
    return os.path.normpath(os.path.join(os.path.dirname(base), address))


def _pointed(document: Any, pointer: str, ref: str) -> Any:
    """The value at a JSON pointer ("/components/schemas/Pet") in `document`."""
    node = document
    if pointer in ("", "/"):
        return node
    if not pointer.startswith("/"):
        raise RefError(f"$ref {ref!r}: the part after # is not a JSON pointer")
    for raw in pointer[1:].split("/"):
        token = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            raise RefError(f"$ref {ref!r} points nowhere (no {token!r} there)")
    return node

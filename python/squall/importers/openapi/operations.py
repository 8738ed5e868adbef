"""An OpenAPI operation as one request with its values filled in: parameters, body, where it goes.

The policy, and why:

- Parameters (path, query, header, cookie; the path item's and the operation's, the operation's
  winning): a path parameter is always sent, a required one always, an optional one too unless
  `--required-only`, each with its documented example (`example`, `examples`, Swagger 2.0's
  `x-example`) when valid, else a value made from its schema (squall.importers.values). Serialized as
  the document's `style`/`explode` (3.x) or `collectionFormat` (2.0) say; path values percent-encoded.
  The headers OpenAPI says a parameter cannot set (Accept, Content-Type, Authorization) are left out,
  and so is a parameter a security scheme fills (the credential from the environment is what goes).
- Bodies: the first media type squall can write, in this order: JSON (`application/json`, `*+json`),
  form (`application/x-www-form-urlencoded`), `multipart/form-data` (binary properties as files),
  `text/plain`, `application/octet-stream`. A required body only in other types (XML alone, say)
  leaves the operation out; an optional one is left off the request.
- An operation whose required value cannot be made (`Unproducible`) is left out, its reason kept for
  the summary; it is never sent with a value that the document would refuse.
- Where it goes: the operation's or path item's own `servers` if they name another origin (then the
  request carries the whole URL), else the document's base path and the route template.
"""

from __future__ import annotations

import json
import keyword
import random
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlsplit

from squall.importers import Options
from squall.importers.openapi.document import METHODS, Document, server_url
from squall.importers.plan import Body, Credential, Request
from squall.importers.sources import dict_at
from squall.importers.values import Unproducible, Values

# What Locust's User, HttpUser and TaskSet already have: a task may not take these names.
RESERVED = frozenset(
    [
        "abstract",
        "client",
        "context",
        "environment",
        "execute_next_task",
        "execute_task",
        "fixed_count",
        "fullname",
        "get_next_task",
        "greenlet",
        "group",
        "host",
        "interrupt",
        "json",
        "max_wait",
        "min_wait",
        "on_start",
        "on_stop",
        "parent",
        "pool_manager",
        "rest",
        "run",
        "schedule_task",
        "sleep",
        "start",
        "stop",
        "tasks",
        "user",
        "wait",
        "wait_function",
        "wait_time",
        "weight",
    ]
)
JSON_TYPES = ("application/json", "text/json")
FILE_BYTES = b"squall test file\n"
_IGNORED_HEADERS = ("accept", "content-type", "authorization")
_PATH_SAFE = "-._~!$&'()*+,;=:@"  # RFC 3986's pchar, less the percent: kept as they are in a path


class Skip(Exception):
    """This operation cannot be sent as the document describes it; the message says why."""


@dataclass
class Operation:
    """One operation of the document, where it was found."""

    method: str
    path: str
    node: dict[str, Any]
    base: str
    item: dict[str, Any]
    item_base: str

    @property
    def label(self) -> str:
        return f"{self.method.upper()} {self.path}"

    @property
    def operation_id(self) -> str | None:
        value = self.node.get("operationId")
        return value if isinstance(value, str) and value.strip() else None

    @property
    def tags(self) -> list[str]:
        tags = self.node.get("tags")
        return [t for t in tags if isinstance(t, str) and t] if isinstance(tags, list) else []


@dataclass
class Built:
    """An operation's request, and the comment lines that say what was chosen for it."""

    request: Request
    notes: list[str] = field(default_factory=list)


def operations(doc: Document) -> list[Operation]:
    """The document's operations in its own order (paths, then methods as each path item lists them)."""
    paths = doc.root.get("paths")
    found: list[Operation] = []
    if not isinstance(paths, dict):
        return found
    for path, raw in paths.items():
        if not isinstance(path, str) or not path.startswith("/"):
            continue
        item, item_base = doc.follow(raw, doc.location)
        if not isinstance(item, dict):
            continue
        for method, node in item.items():
            if method in METHODS and isinstance(node, dict):
                found.append(Operation(method, path, node, item_base, item, item_base))
    return found


class Builder:
    """Requests for the operations of one document, with the credentials it declares."""

    def __init__(self, doc: Document, options: Options, origin: str | None, base_path: str) -> None:
        self.doc = doc
        self.options = options
        self.origin = origin
        self.base_path = base_path
        self.credentials, self.unsent, self._secured = security(doc)

    def values(self, op: Operation, what: str) -> Values:
        """A value maker whose draws depend only on the seed and the operation: adding an operation to the
        document does not change the values of the others."""
        rnd = random.Random(f"{self.options.seed}|{op.label}|{what}")
        return Values(self.doc.resolve, rnd, writing=True, optional=not self.options.required_only)

    def build(self, op: Operation) -> Built:
        notes: list[str] = []
        path_values: dict[str, str] = {}
        query: list[tuple[str, Any]] = []
        headers: list[tuple[str, str]] = []
        cookies: list[tuple[str, str]] = []
        swagger_form: list[tuple[dict[str, Any], str]] = []
        swagger_body: tuple[dict[str, Any], str] | None = None
        for param, base in self._parameters(op):
            where, name = param.get("in"), param.get("name")
            if not isinstance(name, str) or where not in ("path", "query", "header", "cookie", "body", "formData"):
                continue
            if where == "body":
                swagger_body = (param, base)
                continue
            if where == "formData":
                swagger_form.append((param, base))
                continue
            if where == "header" and name.lower() in _IGNORED_HEADERS:
                continue
            if (where, name.lower() if where == "header" else name) in self._secured:
                notes.append(f"the {where} parameter {name} is the credential from the environment")
                continue
            required = where == "path" or param.get("required") is True
            if not required and self.options.required_only:
                continue
            try:
                value = self._parameter_value(op, param, base)
            except Unproducible as e:
                if required:
                    raise Skip(f"no valid value for the {where} parameter {name}: {e}") from None
                notes.append(f"the optional {where} parameter {name} is left out: {e}")
                continue
            if where == "path":
                path_values[name] = _path_value(name, value, param, self.doc.swagger2)
            elif where == "query":
                query += _query(name, value, param, self.doc.swagger2)
            elif where == "header":
                headers.append((name, _simple(value, param, self.doc.swagger2)))
            else:
                cookies.append((name, _simple(value, param, self.doc.swagger2)))
        for name in re.findall(r"\{([^{}]+)\}", op.path):
            if name not in path_values:
                path_values[name] = "1"
                notes.append(f"the path parameter {name} is not described: 1 is sent")
        if self.doc.swagger2:
            body = self._swagger2_body(op, swagger_body, swagger_form, notes)
        else:
            body = self._body(op, notes)
        origin, base_path = self._server(op, notes)
        template = base_path + op.path
        path = template
        for name, value in path_values.items():
            path = path.replace("{" + name + "}", value)
        if origin is not None:
            path, template = origin + path, origin + template
        request = Request(
            method=op.method,
            path=path,
            name=op.path,
            template=template,
            path_values=path_values,
            query=query,
            headers=headers,
            cookies=cookies,
            body=body,
            credentials=requested(self.doc, op, self.credentials),
        )
        return Built(request, notes)

    def _parameters(self, op: Operation) -> list[tuple[dict[str, Any], str]]:
        found: dict[tuple[Any, Any], tuple[dict[str, Any], str]] = {}
        for holder, base in ((op.item, op.item_base), (op.node, op.base)):
            params = holder.get("parameters")
            for raw in params if isinstance(params, list) else []:
                param, at = self.doc.follow(raw, base)
                if isinstance(param, dict) and isinstance(param.get("name"), str) and isinstance(param.get("in"), str):
                    found[(param["name"], param["in"])] = (param, at)
        return list(found.values())

    def _parameter_value(self, op: Operation, param: dict[str, Any], base: str) -> Any:
        values = self.values(op, f"parameter {param.get('in')} {param.get('name')}")
        name = str(param.get("name"))
        if self.doc.swagger2:
            schema: Any = {k: v for k, v in param.items() if k not in ("name", "in", "description", "required")}
        elif isinstance(param.get("schema"), (dict, bool)):
            schema = param["schema"]
        elif isinstance(param.get("content"), dict) and param["content"]:
            media = next(iter(param["content"].values()))
            schema = media.get("schema", {}) if isinstance(media, dict) else {}
            value = values.make(schema, base, name)
            return json.dumps(value, separators=(",", ":"))  # a parameter with content: the JSON text
        else:
            schema = {}
        for candidate in _examples(param, self.doc, base):
            if values.conforms(schema, base, candidate):
                return candidate
        return values.make(schema, base, name)

    # -- bodies ----------------------------------------------------------------------------------------

    def _body(self, op: Operation, notes: list[str]) -> Body | None:
        raw = op.node.get("requestBody")
        if raw is None:
            return None
        body, base = self.doc.follow(raw, op.base)
        if not isinstance(body, dict):
            return None
        content = dict_at(body, "content")
        required = body.get("required") is True
        chosen = choose_media_type(list(content))
        if chosen is None:
            offered = ", ".join(content) or "none"
            if required:
                raise Skip(f"its request body is only in media types squall cannot write ({offered})")
            notes.append(f"its optional request body ({offered}) is left off")
            return None
        if len(content) > 1:
            others = ", ".join(t for t in content if t != chosen)
            notes.append(f"the body as {chosen}; the document also offers {others}")
        media, media_base = self.doc.follow(content[chosen], base)
        media = media if isinstance(media, dict) else {}
        schema = media.get("schema", {})
        values = self.values(op, "body")
        kind = _kind(chosen)
        try:
            if kind in ("form", "multipart"):
                return self._fields(op, kind, chosen, schema, media_base, media)
            value = None
            for candidate in _examples(media, self.doc, media_base):
                candidate = values.as_sent(schema, media_base, candidate)
                if values.conforms(schema, media_base, candidate):
                    value = candidate
                    break
            if value is None:
                value = values.make(schema, media_base, "")
        except Unproducible as e:
            if required:
                raise Skip(f"no valid request body: {e}") from None
            notes.append(f"its optional request body is left off: {e}")
            return None
        if kind == "json":
            return Body("json", value, chosen if chosen not in JSON_TYPES else "")
        if kind == "binary":
            return Body("raw", FILE_BYTES, chosen)
        return Body("raw", value if isinstance(value, str) else json.dumps(value), chosen)

    def _fields(self, op: Operation, kind: str, media_type: str, schema: Any, base: str, media: dict[str, Any]) -> Body:
        """A form or multipart body: an object's properties as fields, binary ones as files."""
        values = self.values(op, "body")
        value = values.make(schema, base, "")
        if not isinstance(value, dict):
            raise Unproducible(f"a {media_type} body must be an object, its schema makes {type(value).__name__}")
        flat, _, _ = values.flat(schema, base)
        if "allOf" in flat:
            flat, _ = values.merge(flat, base)
        properties = dict_at(flat, "properties")
        encoding = dict_at(media, "encoding")
        fields: dict[str, Any] = {}
        files: list[tuple[str, tuple[str, bytes, str]]] = []
        for name, item in value.items():
            sub = properties.get(name, {})
            declared = encoding.get(name, {}).get("contentType") if isinstance(encoding.get(name), dict) else None
            if kind == "multipart" and _is_binary(values, sub, base):
                content_type = declared or _media_type_of(values, sub, base) or "application/octet-stream"
                files.append((name, (f"{name}{_extension(content_type)}", FILE_BYTES, content_type)))
                continue
            if kind == "multipart" and isinstance(item, list) and _is_binary(values, _items(sub), base):
                content_type = declared or "application/octet-stream"
                for i, _ in enumerate(item):
                    files.append((name, (f"{name}{i + 1}{_extension(content_type)}", FILE_BYTES, content_type)))
                continue
            fields[name] = _field_value(item)
        return Body(kind, fields, media_type, files)

    def _swagger2_body(
        self,
        op: Operation,
        body: tuple[dict[str, Any], str] | None,
        form: list[tuple[dict[str, Any], str]],
        notes: list[str],
    ) -> Body | None:
        consumes = op.node.get("consumes", self.doc.root.get("consumes"))
        consumes = [c for c in consumes if isinstance(c, str)] if isinstance(consumes, list) else []
        if body is not None:
            param, base = body
            required = param.get("required") is True
            chosen = choose_media_type(consumes) if consumes else "application/json"
            if chosen is None or _kind(chosen) in ("form", "multipart"):
                if required:
                    raise Skip(f"its body is only in media types squall cannot write ({', '.join(consumes)})")
                notes.append(f"its optional body ({', '.join(consumes)}) is left off")
                return None
            schema = param.get("schema", {})
            values = self.values(op, "body")
            try:
                value = next((c for c in _examples(param, self.doc, base) if values.conforms(schema, base, c)), None)
                if value is None:
                    value = values.make(schema, base, "")
            except Unproducible as e:
                if required:
                    raise Skip(f"no valid request body: {e}") from None
                notes.append(f"its optional body is left off: {e}")
                return None
            if _kind(chosen) == "json":
                return Body("json", value, chosen if chosen not in JSON_TYPES else "")
            if _kind(chosen) == "binary":
                return Body("raw", FILE_BYTES, chosen)
            return Body("raw", value if isinstance(value, str) else json.dumps(value), chosen)
        if not form:
            return None
        has_file = any(p.get("type") == "file" for p, _ in form)
        multipart = has_file or (consumes and "multipart/form-data" in consumes[:1])
        fields: dict[str, Any] = {}
        files: list[tuple[str, tuple[str, bytes, str]]] = []
        for param, base in form:
            name = str(param.get("name"))
            required = param.get("required") is True
            if not required and self.options.required_only:
                continue
            if param.get("type") == "file":
                files.append((name, (f"{name}.bin", FILE_BYTES, "application/octet-stream")))
                continue
            try:
                value = self._parameter_value(op, param, base)
            except Unproducible as e:
                if required:
                    raise Skip(f"no valid value for the form field {name}: {e}") from None
                notes.append(f"the optional form field {name} is left out: {e}")
                continue
            fields[name] = (
                [_scalar(v) for v in value]
                if isinstance(value, list) and param.get("collectionFormat") == "multi"
                else _simple(value, param, True)
            )
        kind = "multipart" if multipart else "form"
        return Body(kind, fields, "multipart/form-data" if multipart else "application/x-www-form-urlencoded", files)

    def _server(self, op: Operation, notes: list[str]) -> tuple[str | None, str]:
        """(an origin when the operation goes elsewhere than the user's host, else None; its base path)."""
        for holder in (op.node, op.item):
            servers = holder.get("servers")
            if isinstance(servers, list) and servers and isinstance(servers[0], dict):
                url = server_url(servers[0])
                parts = urlsplit(url)
                if parts.scheme in ("http", "https") and parts.netloc:
                    origin = f"{parts.scheme}://{parts.netloc}"
                    path = parts.path.rstrip("/")
                    if origin != self.origin:
                        notes.append(f"its own server, {url}")
                        return origin, path
                    return None, path
                return None, parts.path.rstrip("/") if url.startswith("/") else self.base_path
        return None, self.base_path


def choose_media_type(offered: list[str]) -> str | None:
    """The media type squall writes a body in, from those offered (see the module's policy)."""
    ranked = []
    for media_type in offered:
        kind = _kind(media_type)
        if kind is not None:
            ranked.append((("json", "form", "multipart", "text", "binary").index(kind), media_type))
    return min(ranked)[1] if ranked else None


def _kind(media_type: str) -> str | None:
    bare = media_type.split(";")[0].strip().lower()
    if bare in JSON_TYPES or bare.endswith("+json") or bare in ("*/*", "application/*"):
        return "json"
    if bare == "application/x-www-form-urlencoded":
        return "form"
    if bare == "multipart/form-data":
        return "multipart"
    if bare == "text/plain":
        return "text"
    if bare == "application/octet-stream":
        return "binary"
    return None


def _examples(holder: dict[str, Any], doc: Document, base: str) -> list[Any]:
    """The values a parameter or media type documents: example, examples' values, x-example."""
    found = []
    if "example" in holder:
        found.append(holder["example"])
    examples = holder.get("examples")
    if isinstance(examples, dict):
        for raw in examples.values():
            example, _ = doc.follow(raw, base)
            if isinstance(example, dict) and "value" in example:
                found.append(example["value"])
            elif doc.swagger2:  # 2.0: a map of media type to the example itself
                found.append(example)
    if "x-example" in holder:
        found.append(holder["x-example"])
    return [v for v in found if v is not None]


def _is_binary(values: Values, schema: Any, base: str) -> bool:
    try:
        s, _, _ = values.flat(schema, base)
    except Unproducible:
        return False
    return s.get("type") in ("string", "file", None) and (
        s.get("format") in ("binary", "base64") or "contentMediaType" in s or s.get("type") == "file"
    )


def _media_type_of(values: Values, schema: Any, base: str) -> str | None:
    try:
        s, _, _ = values.flat(schema, base)
    except Unproducible:
        return None
    media_type = s.get("contentMediaType")
    return media_type if isinstance(media_type, str) else None


def _items(schema: Any) -> Any:
    return schema.get("items", {}) if isinstance(schema, dict) else {}


def _extension(content_type: str) -> str:
    return {"text/plain": ".txt", "application/json": ".json", "text/csv": ".csv", "image/png": ".png"}.get(
        content_type.split(";")[0].strip(), ".bin"
    )


def _scalar(value: Any) -> str:
    """A value in a URL, a header or a form field: JSON's spelling for booleans and null."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


def _field_value(value: Any) -> Any:
    """A form field's value: text, a list of texts (repeated), an object as its JSON text."""
    if isinstance(value, list) and all(not isinstance(v, (dict, list)) for v in value):
        return [_scalar(v) for v in value]
    return _scalar(value)


def _simple(value: Any, param: dict[str, Any], swagger2: bool) -> str:
    """A path, header or cookie value: arrays and objects as OpenAPI's simple style (or 2.0's csv) write them."""
    if isinstance(value, list):
        separator = _separator(param, swagger2) or ","
        return separator.join(_scalar(v) for v in value)
    if isinstance(value, dict):
        if param.get("explode") is True:
            return ",".join(f"{k}={_scalar(v)}" for k, v in value.items())
        return ",".join(f"{k},{_scalar(v)}" for k, v in value.items())
    return _scalar(value)


def _path_value(name: str, value: Any, param: dict[str, Any], swagger2: bool) -> str:
    """A path parameter as its 3.x style writes it, each value percent-encoded: simple (the default, as
    `_simple`), label (`.3,4`, exploded `.3.4`; an object `.k,v` or `.k=v`) or matrix (`;id=3,4`,
    exploded `;id=3;id=4`; an object `;id=k,v` or `;k=v`)."""
    style = None if swagger2 else param.get("style")
    if style not in ("label", "matrix"):
        return quote(_simple(value, param, swagger2), safe=_PATH_SAFE)
    explode = param.get("explode") is True

    def q(v: Any) -> str:  # a value's own separators escaped: only the style's are left as they are
        return quote(_scalar(v), safe="-._~!$&'()*+:@")

    if isinstance(value, dict):
        pairs = [(q(k), q(v)) for k, v in value.items()]
        if style == "label":
            return "." + (".".join(f"{k}={v}" for k, v in pairs) if explode else ",".join(f"{k},{v}" for k, v in pairs))
        if explode:
            return "".join(f";{k}={v}" for k, v in pairs)
        return f";{q(name)}=" + ",".join(f"{k},{v}" for k, v in pairs)
    items = [q(v) for v in value] if isinstance(value, list) else [q(value)]
    if style == "label":
        return "." + ("." if explode else ",").join(items)
    if explode:
        return "".join(f";{q(name)}={v}" for v in items)
    return f";{q(name)}=" + ",".join(items)


def _separator(param: dict[str, Any], swagger2: bool) -> str | None:
    """The separator of an array written in one value; None: each item its own parameter (exploded)."""
    if swagger2:
        fmt = param.get("collectionFormat")
        fmt = fmt if isinstance(fmt, str) else "csv"
        return None if fmt == "multi" else {"ssv": " ", "tsv": "\t", "pipes": "|"}.get(fmt, ",")
    style = param.get("style")
    style = style if isinstance(style, str) else "form" if param.get("in") in ("query", "cookie") else "simple"
    explode = param.get("explode", style == "form")
    if style == "form" and explode is True:
        return None
    return {"spaceDelimited": " ", "pipeDelimited": "|"}.get(style, ",")


def _query(name: str, value: Any, param: dict[str, Any], swagger2: bool) -> list[tuple[str, Any]]:
    """A query parameter as (name, value) pairs: an exploded array repeats its name, an object is
    written as its style says (form: its properties as parameters; deepObject: name[key])."""
    if isinstance(value, list):
        separator = _separator(param, swagger2)
        if separator is None:
            return [(name, [_scalar(v) for v in value])]
        return [(name, separator.join(_scalar(v) for v in value))]
    if isinstance(value, dict):
        if param.get("style") == "deepObject":
            return [(f"{name}[{k}]", _scalar(v)) for k, v in value.items()]
        if param.get("explode", True) is True:
            return [(k, _scalar(v)) for k, v in value.items()]
        return [(name, ",".join(f"{k},{_scalar(v)}" for k, v in value.items()))]
    return [(name, value if isinstance(value, (int, float)) and not isinstance(value, bool) else _scalar(value))]


# -- security -------------------------------------------------------------------------------------------


def security(doc: Document) -> tuple[list[Credential], list[str], set[tuple[str, str]]]:
    """(the credentials the document's operations use, read from the environment; the schemes squall
    does not send, said why; the (in, name) pairs the credentials fill, so no parameter sets them too).

    A credential that every operation asks for, in a header, query parameter or cookie no other scheme
    fills, is set once, on the session; any other goes with each request whose operation asks for its
    scheme (`per_request`): schemes that share one (a bearer token and HTTP basic both fill
    Authorization) each get their own, and an operation that asks for none (`security: []`, a login, a
    health check, another server's) gets no secret it did not ask for."""
    schemes = _schemes(doc)
    used: list[str] = []
    requirements = [doc.root.get("security")]
    for op in operations(doc):
        requirements.append(op.node.get("security"))
    for requirement in requirements:
        for alternative in requirement if isinstance(requirement, list) else []:
            for name in alternative if isinstance(alternative, dict) else []:
                if name in schemes and name not in used:
                    used.append(name)
    credentials: list[Credential] = []
    unsent: list[str] = []
    taken: set[str] = set()
    for name in used:
        scheme, _ = doc.follow(schemes[name], doc.location)
        credential = _credential(name, scheme, taken) if isinstance(scheme, dict) else None
        if credential is None:
            kind = scheme.get("type") if isinstance(scheme, dict) else None
            unsent.append(f"the security scheme {name} ({kind or 'no type'}) is not sent: squall cannot make it")
        else:
            credentials.append(credential)
    slots = [_slot(c) for c in credentials]
    asked = [_asked(doc, op) for op in operations(doc)]
    for credential, slot in zip(credentials, slots):
        if slots.count(slot) > 1 or any(credential.scheme not in names for names in asked):
            credential.per_request = True
            suffix = {"query": "params", "cookie": "cookies"}.get(credential.kind, "headers")
            credential.constant = _variable(f"{credential.scheme}_{suffix}", taken)
    return credentials, unsent, set(slots)


def _asked(doc: Document, op: Operation) -> set[str]:
    """The schemes an operation's security requirement names in any of its alternatives (its own, else
    the document's)."""
    requirement = op.node.get("security", doc.root.get("security"))
    alternatives = requirement if isinstance(requirement, list) else []
    return {name for alternative in alternatives if isinstance(alternative, dict) for name in alternative}


def _schemes(doc: Document) -> dict[str, Any]:
    if doc.swagger2:
        schemes = doc.root.get("securityDefinitions")
    else:
        schemes = dict_at(doc.root, "components").get("securitySchemes")
    return schemes if isinstance(schemes, dict) else {}


def _credential(name: str, scheme: dict[str, Any], taken: set[str]) -> Credential | None:
    kind = str(scheme.get("type", "")).lower()
    http = str(scheme.get("scheme", "")).lower() if kind == "http" else ""
    if kind == "apikey":
        where, field_name = scheme.get("in"), scheme.get("name")
        if where not in ("header", "query", "cookie") or not isinstance(field_name, str) or not field_name:
            return None
        words = _variable(name, set())
        var = _variable(name if re.search(r"KEY|TOKEN", words) else f"{name}_key", taken)
        return Credential([var], where, field_name, f"API key {name}: the {where} {field_name}", name)
    if http == "bearer" or kind in ("oauth2", "openidconnect"):
        words = _variable(name, set())
        var = _variable(name if words.endswith("TOKEN") else f"{name}_token", taken)
        what = {"http": "HTTP bearer", "oauth2": "OAuth2", "openidconnect": "OpenID Connect"}[kind]
        return Credential([var], "bearer", "Authorization", f"{what} {name}: a bearer token", name)
    if kind == "basic" or http == "basic":
        user, password = _variable(f"{name}_user", taken), _variable(f"{name}_password", taken)
        return Credential([user, password], "basic", "Authorization", f"HTTP basic {name}", name)
    return None


def _slot(credential: Credential) -> tuple[str, str]:
    """Where a credential goes: (header, its name in lower case), (query, name) or (cookie, name)."""
    where = "header" if credential.kind in ("header", "bearer", "basic") else credential.kind
    return where, credential.name.lower() if where == "header" else credential.name


def requested(doc: Document, op: Operation, credentials: list[Credential]) -> list[str]:
    """The schemes sent per request that this operation accepts, in the order of its security
    requirement's alternatives (its own, else the document's) that squall can send whole: at run time
    the first of them that is set goes (squall.importers.emit)."""
    requirement = op.node.get("security", doc.root.get("security"))
    known = {c.scheme: c for c in credentials}
    found: list[str] = []
    for alternative in requirement if isinstance(requirement, list) else []:
        if isinstance(alternative, dict) and all(name in known for name in alternative):
            found += [name for name in alternative if known[name].per_request and name not in found]
    return found


def _variable(name: str, taken: set[str]) -> str:
    """An environment variable's name for a security scheme's name: API_KEY for apiKey or api_key."""
    text = re.sub(r"[^A-Za-z0-9]+", "_", _words(name)).strip("_").upper() or "SECRET"
    if text[0].isdigit():
        text = "API_" + text
    candidate, n = text, 2
    while candidate in taken:
        candidate, n = f"{text}_{n}", n + 1
    taken.add(candidate)
    return candidate


# -- names ----------------------------------------------------------------------------------------------


def function_name(op: Operation, taken: set[str]) -> str:
    """The task's name: its operationId in snake_case, or its method and path; never a name the user
    class has already (run, stop, wait...), a keyword, or one taken."""
    source = op.operation_id or f"{op.method} {op.path}"
    return identifier(source, taken)


def identifier(source: str, taken: set[str]) -> str:
    name = re.sub(r"[^A-Za-z0-9]+", "_", _words(source)).strip("_").lower() or "operation"
    if name[0].isdigit():
        name = "op_" + name
    if name in RESERVED or keyword.iskeyword(name) or name.startswith("_"):
        name += "_op"
    candidate, n = name, 2
    while candidate in taken:
        candidate, n = f"{name}_{n}", n + 1
    taken.add(candidate)
    return candidate


def _words(text: str) -> str:
    """camelCase and HTTPBearer as words: camel_Case, HTTP_Bearer."""
    text = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", text)
    return re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", text)


def class_name(text: str, suffix: str, taken: set[str]) -> str:
    """A CamelCase class name from `text` (an API's title, a resource): "Swagger Petstore" -> SwaggerPetstoreUser."""
    words = re.findall(r"[A-Za-z0-9]+", text)
    name = "".join(w[:1].upper() + w[1:] for w in words) or "Api"
    if name[0].isdigit():
        name = "Api" + name
    name += suffix
    candidate, n = name, 2
    while candidate in taken or keyword.iskeyword(candidate):
        candidate, n = f"{name}{n}", n + 1
    taken.add(candidate)
    return candidate

"""Where an operation needs an id that another returns: a create, then the requests on what it created.

The policy, and why:

- Without this, `GET /items/{item_id}` is sent with a made-up id and measures a server's 404 path, not
  its read; with it, the id comes from `POST /items`'s response at run time, as a real client would.
- A flow is found only where the document makes it clear, never guessed from a path alone:
  - its `links` (3.x): a link from a POST's success response to an operation, with a parameter taken
    from `$response.body#/...`, says exactly which field fills which parameter;
  - or its names: a POST on a collection (`/items`, no parameter in the path) whose success response
    is an object with a property named as the item path's only parameter (`/items/{item_id}` and
    `item_id`), or an `id` property when that parameter is an id (`id`, `petId`, `item_id`).
- The flow holds the POST, then every operation on `/items/{item_id}` and below it with no other path
  parameter, in the order a client would use them: reads, updates, other requests, deletes last (the
  delete leaves nothing behind). Each operation is in one flow at most; it is then not a task of its
  own (its made-up id would only measure 404s).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from squall.importers.openapi.document import Document
from squall.importers.openapi.operations import Operation
from squall.importers.sources import dict_at
from squall.importers.values import Unproducible, Values

ORDER = ("get", "head", "options", "put", "patch", "post", "trace", "delete")
SUCCESS = ("200", "201", "202", "2XX", "2xx", "default")


@dataclass
class Found:
    """A flow: the create, the field of its response that holds the id, the parameter it fills, the
    operations on the item in order, and why it was found."""

    create: Operation
    field: list[str]
    parameter: str
    steps: list[Operation]
    by_links: bool
    integer: bool  # the id is an integer (needs no percent-encoding)


def find(doc: Document, ops: list[Operation], values: Values) -> list[Found]:
    """The flows of these operations (those that could be built), each operation in one at most."""
    used: set[int] = set()
    found = []
    by_path: dict[str, list[Operation]] = {}
    for op in ops:
        by_path.setdefault(op.path, []).append(op)
    for create in ops:
        if create.method != "post" or "{" in create.path or id(create) in used:
            continue
        properties = _success_schema(doc, create, values) or {}
        linked = _linked(doc, create, ops)
        flow: tuple[str, list[str], bool] | None = None
        if linked is not None:
            _target, parameter, field = linked
            flow = (parameter, field, True)
        elif properties:
            for path, at_path in by_path.items():
                item = _item_parameter(create.path, path)
                if item is None or not any(id(op) not in used for op in at_path):
                    continue
                if item in properties:
                    flow = (item, [item], False)
                elif "id" in properties and _is_id(item):
                    flow = (item, ["id"], False)
                if flow is not None:
                    break
        if flow is None:
            continue
        parameter, field, by_links = flow
        prefix = f"{create.path.rstrip('/')}/{{{parameter}}}"
        steps = [
            op
            for op in ops
            if id(op) not in used
            and op is not create
            and (op.path == prefix or op.path.startswith(prefix + "/"))
            and set(re.findall(r"\{([^{}]+)\}", op.path)) == {parameter}
        ]
        if not steps:
            continue
        steps.sort(key=lambda op: (ORDER.index(op.method) if op.method in ORDER else 5, op.path.count("/")))
        for op in (create, *steps):
            used.add(id(op))
        integer = _field_type(properties, field) == "integer"
        found.append(Found(create, field, parameter, steps, by_links, integer))
    return found


def _item_parameter(collection: str, path: str) -> str | None:
    """`item_id` when `path` is `collection/{item_id}`; else None."""
    match = re.fullmatch(re.escape(collection.rstrip("/")) + r"/\{([^{}/]+)\}", path)
    return match.group(1) if match else None


def _is_id(parameter: str) -> bool:
    return (
        parameter.lower() == "id" or parameter.endswith(("Id", "ID", "_id", "-id")) or parameter.lower().endswith("id")
    )


def _success_schema(doc: Document, op: Operation, values: Values) -> dict[str, Any] | None:
    """The properties of the object a successful response returns (JSON), or None."""
    responses = op.node.get("responses")
    if not isinstance(responses, dict):
        return None
    for code in (*sorted(c for c in responses if str(c).startswith("2")), "default"):
        if code not in responses:
            continue
        response, base = doc.follow(responses[code], op.base)
        if not isinstance(response, dict):
            continue
        if doc.swagger2:
            schema = response.get("schema")
        else:
            content = dict_at(response, "content")
            media = next((m for t, m in content.items() if "json" in t or t == "*/*"), None)
            media, base = doc.follow(media, base) if media is not None else (None, base)
            schema = media.get("schema") if isinstance(media, dict) else None
        if schema is None:
            continue
        try:
            s, at, _ = values.flat(schema, base)
            if "allOf" in s:
                s, at = values.merge(s, at)
        except Unproducible:
            return None
        properties = s.get("properties")
        if isinstance(properties, dict):
            resolved = {}
            for name, sub in properties.items():
                try:
                    resolved[name], _, _ = values.flat(sub, at)
                except Unproducible:
                    resolved[name] = {}
            return resolved
        return None
    return None


def _linked(doc: Document, create: Operation, ops: list[Operation]) -> tuple[Operation, str, list[str]] | None:
    """(the operation, its parameter, the response's field) a link of the create's response names."""
    responses = create.node.get("responses")
    if doc.swagger2 or not isinstance(responses, dict):
        return None
    by_id = {op.operation_id: op for op in ops if op.operation_id}
    for code, raw in responses.items():
        if not str(code).startswith("2"):
            continue
        response, base = doc.follow(raw, create.base)
        links = response.get("links") if isinstance(response, dict) else None
        for raw_link in (links or {}).values() if isinstance(links, dict) else []:
            link, _ = doc.follow(raw_link, base)
            if not isinstance(link, dict):
                continue
            target = by_id.get(link.get("operationId"))  # type: ignore[arg-type]
            parameters = dict_at(link, "parameters")
            for parameter, expression in parameters.items():
                parameter = parameter.rpartition(".")[2]  # "path.petId" names its location too
                if target is None or not isinstance(expression, str):
                    continue
                match = re.fullmatch(r"\$response\.body#(/.*)", expression)
                if match and _item_parameter(create.path, target.path) == parameter:
                    field = [p.replace("~1", "/").replace("~0", "~") for p in match.group(1)[1:].split("/")]
                    return target, parameter, field
    return None


def _field_type(properties: dict[str, Any], field: list[str]) -> str | None:
    if len(field) != 1:
        return None
    schema = properties.get(field[0])
    kind = schema.get("type") if isinstance(schema, dict) else None
    return kind if isinstance(kind, str) else None

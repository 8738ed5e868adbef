"""OpenAPI 3.0, 3.1 and Swagger 2.0 documents as load tests: `squall import openapi SPEC`.

`plan(location, options)` reads the document (document.py), makes each operation a request
(operations.py), finds where a create's id feeds later requests (flows.py) and returns the plan the
shared emitter writes (squall.importers.emit). Every operation is either in the plan, as a task or a
flow's step, or in its `left_out` with the reason, so the summary can account for all of them.
"""

from __future__ import annotations

import os
import random
from urllib.parse import urlsplit, urlunsplit

from squall.importers import Options, pysource, sources
from squall.importers.openapi import flows as flows_
from squall.importers.openapi.document import Document
from squall.importers.openapi.operations import (
    Builder,
    Built,
    Operation,
    Skip,
    class_name,
    function_name,
    identifier,
    operations,
)
from squall.importers.plan import Flow, Plan, Step, Task
from squall.importers.sources import dict_at
from squall.importers.values import Values


def plan(location: str, options: Options) -> Plan:
    """The load test for the OpenAPI document at `location` (a path or an http(s) URL); SourceError
    (RefError among them) for a document that cannot be read."""
    doc = Document(sources.read(location))
    origin, base_path, said = doc.server()
    builder = Builder(doc, options, origin, base_path)
    ops = operations(doc)
    tags = sorted({t for op in ops for t in op.tags})
    unknown = [t for t in options.weights if t not in tags]
    if unknown:  # (a typo would weigh nothing, silently)
        raise sources.SourceError(
            f"--weight {unknown[0]}=...: no operation of {location} is tagged '{unknown[0]}' "
            f"(its tags: {', '.join(tags) or 'none'})"
        )
    built: dict[int, Built] = {}
    left_out: list[tuple[str, str]] = []
    for op in ops:
        try:
            built[id(op)] = builder.build(op)
        except Skip as e:
            left_out.append((_label(op), str(e)))
        except (TypeError, AttributeError, KeyError, IndexError, ValueError) as e:
            if isinstance(e, sources.SourceError):  # (a broken $ref: the document's error, exit 2)
                raise
            # A part of the operation that is not what OpenAPI says it is (a list where a schema goes):
            # this operation is left out, said so, the others imported.
            left_out.append((_label(op), f"its description is malformed ({type(e).__name__}: {e})"))
    found = []
    if options.flows:
        values = Values(doc.resolve, random.Random(options.seed), writing=False)
        found = flows_.find(doc, [op for op in ops if id(op) in built], values)
    in_flows = {id(op) for flow in found for op in (flow.create, *flow.steps)}
    names: set[str] = set()
    tasks = []
    for op in ops:
        if id(op) in built and id(op) not in in_flows:
            b = built[id(op)]
            tasks.append(Task(function_name(op, names), b.request, _comments(op, b), op.tags, _weight(op, options)))
    classes: set[str] = {"SequentialTaskSet", "HttpUser"}
    flows = [_flow(flow, built, options, classes) for flow in found]
    info = dict_at(doc.root, "info")
    title = str(info.get("title") or os.path.basename(location) or "API")
    user_class = class_name(title, "User", classes)
    if origin is None:
        host_comment = f"The document names no host ({said}): give it with -H."
    else:
        host_comment = f"From the document ({said}); -H replaces it."
    if base_path:
        host_comment += f" Every path starts with the base path {base_path}."
    result = Plan(
        user_class=user_class,
        about=[],
        host=origin,
        host_comment=host_comment,
        credentials=builder.credentials,
        tasks=tasks,
        flows=flows,
        left_out=left_out,
        notes=builder.unsent,
        wait=options.wait,
    )
    result.about = _about(result, doc, title, info, location, options, builder.unsent)
    return result


def _label(op: Operation) -> str:
    return f"{op.label} ({op.operation_id})" if op.operation_id else op.label


def _weight(op: Operation, options: Options) -> int:
    weights = [options.weights[t] for t in op.tags if t in options.weights]
    return max(weights) if weights else 1


def _comments(op: Operation, built: Built) -> list[str]:
    summary = op.node.get("summary") or op.node.get("description") or ""
    summary = " ".join(str(summary).split())
    if len(summary) > 100:
        summary = summary[:97].rstrip() + "..."
    first = _label(op) + (f": {summary}" if summary else "")
    notes = ["deprecated in the document"] if op.node.get("deprecated") is True else []
    notes += built.notes
    return [first, *(note[:1].upper() + note[1:] + "." for note in notes)]


def _flow(found: flows_.Found, built: dict[int, Built], options: Options, classes: set[str]) -> Flow:
    create = found.create
    last = [s for s in create.path.split("/") if s and "{" not in s]
    resource = last[-1] if last else "item"
    parameter = found.parameter
    attribute = identifier(parameter if parameter.lower() != "id" else f"{resource.rstrip('s') or 'item'}_id", set())
    names: set[str] = set()
    steps = [
        Step(function_name(create, names), built[id(create)].request, _comments(create, built[id(create)]), found.field)
    ]
    for op in found.steps:
        steps.append(
            Step(function_name(op, names), built[id(op)].request, _comments(op, built[id(op)]), uses=parameter)
        )
    how = "the document's links say so" if found.by_links else "their names say so"
    field = "/".join(found.field)
    order = ", ".join(op.label for op in found.steps)
    comments = [
        f"{create.label} creates what the requests on {create.path}/{{{parameter}}} then use: its response's "
        f"`{field}` is their {parameter} ({how}). In order: {order}. A create that fails, or returns no "
        f"{field} (its request then failed, saying so), ends the flow; so does its last request, which hands "
        "the user back to its other tasks."
    ]
    tags: list[str] = []
    for op in (create, *found.steps):
        tags += [t for t in op.tags if t not in tags]
    weight = max(_weight(op, options) for op in (create, *found.steps))
    return Flow(
        class_name=class_name(resource, "Flow", classes),
        attribute=attribute,
        steps=steps,
        comments=comments,
        tags=tags,
        weight=weight,
        quoted=not found.integer,
    )


def _about(
    result: Plan, doc: Document, title: str, info: dict[str, object], location: str, options: Options, unsent: list[str]
) -> list[str]:
    """The module docstring's lines."""
    version = f" {info['version']}" if info.get("version") else ""
    kind = "Swagger" if doc.swagger2 else "OpenAPI"
    paragraphs = [
        f"{title}{version}: a Locust load test made by squall import openapi.",
        f"From {_shown(location)} ({kind} {doc.version}, {doc.syntax}): {result.tally()}"
        + (" (listed at the end of this file)." if result.left_out else ".")
        + " Requests are named by their route templates and tagged with their operations' tags: -T/--tags"
        " and -E/--exclude-tags run a part.",
        "The values sent are valid against the document's schemas: its own examples and defaults where"
        " they are valid, otherwise values made from the types and constraints when this file was made"
        f" (seed {options.seed}), the same on every run.",
        *unsent,
        f"Runs unchanged with squall (squall -f {options.output}) and Locust (locust -f {options.output}).",
    ]
    return pysource.docstring(paragraphs)


def _shown(location: str) -> str:
    """Where the document came from, without what a URL may carry that is secret (user, query)."""
    if not sources.is_url(location):
        return os.path.basename(location)
    parts = urlsplit(location)
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme, host, parts.path, "", ""))

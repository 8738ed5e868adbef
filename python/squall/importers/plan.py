"""What an importer hands the emitter: a load test described without any source format in it.

An importer (OpenAPI's, Postman's, HAR's) reads its document into a `Plan`: the user class's host and
wait, the credentials and variables read from the environment, the tasks (one request each) and the
flows (requests in order, values from one response used by the next, think times), and what it left
out and why. squall.importers.emit writes any plan as the same plain Locust file, so that every
importer's output reads alike and the emitter's choices (layout, comments, what runs natively) are made
once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Body:
    """A request's body: `kind` "json" (json=), "form" (data= a mapping, urlencoded), "multipart" (files=
    and data=) or "raw" (data= text or bytes, sent with `content_type`)."""

    kind: str
    value: Any
    content_type: str = ""
    files: list[tuple[str, tuple[str, bytes, str]]] = field(default_factory=list)


@dataclass
class Request:
    """One request, its values filled in. `path` is what is sent (the server's base path included, or a
    whole URL when the request goes elsewhere than the user's host); `name` is its statistics name, the
    route template; `template` is `path` with `{param}` left where each `path_values` entry went, for
    flows that put a value from a response there."""

    method: str
    path: str
    name: str
    template: str = ""
    path_values: dict[str, str] = field(default_factory=dict)
    query: list[tuple[str, Any]] = field(default_factory=list)
    headers: list[tuple[str, str]] = field(default_factory=list)
    cookies: list[tuple[str, str]] = field(default_factory=list)
    body: Body | None = None
    credentials: list[str] = field(default_factory=list)  # schemes whose per-request credential goes along


@dataclass
class Task:
    """A task of the user class: one request, with the comment lines that say what it is and what was chosen."""

    function: str
    request: Request
    comments: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    weight: int = 1


@dataclass
class Capture:
    """A value a step's response returned, kept in the flow's attribute `attribute` for later requests
    (correlation): `source` "json" (the field at `key`, a path), "header" (the header `key[0]`), "cookie"
    (the cookie `key[0]`, as the session's jar holds it after the response) or "hidden" (the value of
    the hidden form field named `key[0]` in an HTML response). Later requests refer to it as
    `self.<attribute>` (a pysource.Code in their values)."""

    attribute: str
    source: str
    key: list[str]
    comment: str = ""


@dataclass
class Step:
    """A request of a flow: the first (`capture`) keeps a field of its response's JSON in the flow's
    attribute; the later ones put that attribute where `uses` (a path parameter) goes. A recorded
    journey's step may wait first (`think`, seconds: the gap the recording had) and keep values of its
    response (`captures`) that later steps send."""

    function: str
    request: Request
    comments: list[str] = field(default_factory=list)
    capture: list[str] | None = None  # the path to the field in the response's JSON: ["id"]
    uses: str | None = None  # the path parameter the attribute fills
    think: float = 0.0
    captures: list[Capture] = field(default_factory=list)


@dataclass
class Flow:
    """Requests that run in order (a SequentialTaskSet): a create, then the requests on what it created."""

    class_name: str
    attribute: str  # where the created thing's id is kept: pet_id
    steps: list[Step]
    comments: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    weight: int = 1
    quoted: bool = True  # the id is text: percent-encoded in the path
    interrupt: bool = True  # the last step hands the user back to its other tasks


@dataclass
class Credential:
    """A secret from the environment, and where it goes: "header", "query" or "cookie" (`name`), "bearer"
    (the Authorization header) or "basic" (two variables: user and password). Set on the session once,
    or, when another credential goes to the same place (`per_request`), kept in `constant` (a mapping,
    empty when unset) that the requests asking for `scheme` send."""

    variables: list[str]
    kind: str
    name: str = ""
    comment: str = ""
    scheme: str = ""
    per_request: bool = False
    constant: str = ""


@dataclass
class Variable:
    """A module-level constant read from the environment (`name`, the variable's too), `default` when
    unset: a value the source left to its user (a Postman variable without a value)."""

    name: str
    default: str = ""
    comment: str = ""


@dataclass
class Plan:
    """A load test: one user class, its tasks and flows; `about` is the module docstring's lines."""

    user_class: str
    about: list[str]
    host: str | None
    host_comment: str
    credentials: list[Credential] = field(default_factory=list)
    tasks: list[Task] = field(default_factory=list)
    flows: list[Flow] = field(default_factory=list)
    left_out: list[tuple[str, str]] = field(default_factory=list)  # (the operation, why)
    notes: list[str] = field(default_factory=list)  # what else did not carry over (a scheme squall cannot send)
    wait: tuple[float, float] = (1.0, 3.0)
    variables: list[Variable] = field(default_factory=list)
    noun: str = "operation"  # what the tally counts: "operation", "request"
    modules: list[str] = field(default_factory=list)  # standard modules the requests' Code values use
    helpers: list[str] = field(default_factory=list)  # the emitter's helpers they call: "_basic"

    def tally(self) -> str:
        """What became of the operations: "19 operations: 7 tasks, 12 in 3 flows, 0 left out"."""
        steps = sum(len(f.steps) for f in self.flows)
        total = len(self.tasks) + steps + len(self.left_out)
        flows = f", {steps} in {_counted(len(self.flows), 'flow')}" if self.flows else ""
        tasks = _counted(len(self.tasks), "task")
        return f"{_counted(total, self.noun)}: {tasks}{flows}, {len(self.left_out)} left out"


def _counted(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")

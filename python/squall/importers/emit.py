"""A plan (squall.importers.plan) as a locustfile: the one writer of every importer's output.

The file it writes, and why:

- Plain Locust: `from locust import HttpUser, task, tag, between ...`, nothing of squall's, so that it
  runs unchanged under Locust and squall alike.
- One user class; the host the document names (a comment says where it came from; `-H` replaces it);
  the think time `between(min, max)` (`constant(0)` for none); credentials every request asks for set
  once in `on_start` on the session (headers, query parameters, cookies), others with the requests that
  ask for them, from environment variables named at the top of the file, and left out when a variable
  is unset, so the file holds no secret and runs as it is.
- One task per request, its values written as literals: what is sent is what the file says, the same
  every run, and a task that is only `self.client.<verb>(...)` with constant arguments is run by
  squall's engine without Python per request (docs/locustfiles.md, native users). Each task is named
  after its operation, its statistics name is the route template, its tags and weight the importer's.
- A flow is a nested SequentialTaskSet: its first request keeps an id from its response (`_field`), the
  next ones put it in their paths, the last hands the user back to the other tasks (`interrupt`, the
  user's wait_time first; the flow's own is `constant(0)`, its steps back to back). A
  recorded journey's steps may first wait the gap the recording had (`time.sleep`, which both squall
  and Locust's gevent run cooperatively) and keep values of their responses (a JSON field, a header, a
  cookie, a hidden form field) in the flow's attributes for the later requests; a value not found fails
  its request (`catch_response`, saying which value) and ends the flow there, since the requests that
  send it would only be refused.
- Values the source left to its user (Postman's variables without a value) are module-level constants
  read from environment variables named at the top of the file; one unset is said once at the start
  (a warning), since it is sent empty.
- Laid out as `ruff format` lays it out (squall.importers.pysource), so the user's formatter leaves it as
  it is; what was left out is listed at the end, one comment line each.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from squall.importers import pysource
from squall.importers.plan import Capture, Credential, Flow, Plan, Request, Step, Task
from squall.importers.pysource import Code, Spread, assignment, call, comment, lines, string

BASIC_HELPER = '''def _basic(user, password):
    """An HTTP basic Authorization header's value."""
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()'''
FIELD_HELPER = '''def _field(response, *path):
    """The value at `path` in a successful response's JSON body, or None."""
    if not response.ok:
        return None
    try:
        value = response.json()
    except ValueError:
        return None
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    return value'''
JSON_HELPER = '''def _json(response, *path):
    """The value at `path` in a response's JSON body (a list's items by their index), or None."""
    try:
        value = response.json()
    except ValueError:
        return None
    for key in path:
        if isinstance(value, list) and key.isdigit() and int(key) < len(value):
            value = value[int(key)]
        elif isinstance(value, dict):
            value = value.get(key)
        else:
            return None
    return value'''
HIDDEN_HELPER = r'''def _hidden(response, name):
    """The value of the hidden form field `name` in an HTML response, or None."""
    for tag in re.findall(r"<input\b[^>]*>", response.text or "", re.IGNORECASE):
        pairs = re.findall(
            r"""([\w-]+)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+))""", tag
        )
        attributes = {key.lower(): html.unescape(a or b or c) for key, a, b, c in pairs}
        if attributes.get("name") == name and "value" in attributes:
            return attributes["value"]
    return None'''


DYNAMIC_HELPER = '''def _guid():
    """Postman's {{$guid}} and {{$randomUUID}}: a new UUID (version 4)."""
    return str(uuid.uuid4())


def _timestamp():
    """Postman's {{$timestamp}}: the Unix time, in whole seconds."""
    return str(int(time.time()))


def _iso_timestamp():
    """Postman's {{$isoTimestamp}}: the time in UTC, ISO 8601 to the millisecond."""
    now = time.time()
    seconds = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now))
    return f"{seconds}.{int(now % 1 * 1000):03d}Z"


def _random_int():
    """Postman's {{$randomInt}}: an integer from 0 to 1000."""
    return str(random.randint(0, 1000))


def _random_boolean():
    """Postman's {{$randomBoolean}}: true or false."""
    return random.choice(["true", "false"])'''


def _basic(plan: Plan) -> bool:
    return "_basic" in plan.helpers or any(c.kind == "basic" for c in plan.credentials)


def _steps(plan: Plan) -> list[Step]:
    return [s for f in plan.flows for s in f.steps]


def _captures(plan: Plan, source: str) -> bool:
    return any(c.source == source for s in _steps(plan) for c in s.captures)


def locustfile(plan: Plan) -> str:
    """The source of the locustfile for `plan`."""
    plan, either = _with_credentials(plan)
    out = ['"""' + plan.about[0], *plan.about[1:], '"""', ""]
    out += _imports(plan)
    if _basic(plan):
        out += ["", "", BASIC_HELPER, ""]
    if "_dynamic" in plan.helpers:
        out += ["", "", DYNAMIC_HELPER, ""]
    if plan.credentials:
        out += ["", *comment("Credentials, from the environment; a request goes without any that is unset.", 0)]
        for credential in plan.credentials:
            if credential.comment:
                out += comment(credential.comment, 0)
            for variable in credential.variables:
                out += call("os.environ.get", [(None, variable), (None, "")], 0, f"{variable} = ")
            if credential.per_request:
                out += _per_request(credential)
        if either:
            out += comment("Operations that accept any of these send the first that is set.", 0)
        for name, constants in either.items():
            out += assignment(f"{name} = ", " or ".join(constants), 0)
    if plan.variables:
        out += ["", *comment("Variables the source left without a value, from the environment.", 0)]
        for constant in plan.variables:
            if constant.comment:
                out += comment(constant.comment, 0)
            out += call("os.environ.get", [(None, constant.name), (None, constant.default)], 0, f"{constant.name} = ")
        unset = [constant.name for constant in plan.variables if not constant.default]
        if unset:  # said once at the start: sent empty, such a value makes requests the server refuses
            out += lines(unset, 0, "for _name in ", ":")
            out.append(f"{pysource.INDENT}if not os.environ.get(_name):")
            message = "%s is not set: the requests that use it send it empty"
            out += call("logging.getLogger(__name__).warning", [(None, message), (None, Code("_name"))], 2)
    if any(s.capture is not None for s in _steps(plan)):
        out += ["", "", FIELD_HELPER]
    if _captures(plan, "json"):
        out += ["", "", JSON_HELPER]
    if _captures(plan, "hidden"):
        out += ["", "", HIDDEN_HELPER]
    out += ["", "", *_user(plan)]
    if plan.left_out:
        out += ["", ""]
        out += comment(f"Left out ({len(plan.left_out)}):", 0)
        for operation, why in plan.left_out:
            out += comment(f"- {operation}: {why}", 0)
    return "\n".join(_two_blank_lines_at_most(out)) + "\n"


def _two_blank_lines_at_most(out: list[str]) -> list[str]:
    """`out` with no more than two blank lines in a row, as ruff format lays out a module (a block that
    ends with one, for the block that may follow it, may be followed by another)."""
    kept: list[str] = []
    for line in out:
        if line == "" and kept[-2:] == ["", ""]:
            continue
        kept.append(line)
    return kept


def _imports(plan: Plan) -> list[str]:
    modules = set(plan.modules)
    if _basic(plan):
        modules.add("base64")
    if "_dynamic" in plan.helpers:
        modules |= {"random", "time", "uuid"}
    if _captures(plan, "hidden"):
        modules |= {"html", "re"}
    if plan.credentials or plan.variables:
        modules.add("os")
    if any(not constant.default for constant in plan.variables):
        modules.add("logging")
    if any(s.think for s in _steps(plan)):
        modules.add("time")
    standard = [f"import {m}" for m in sorted(modules)]
    if any(f.quoted for f in plan.flows):
        standard.append("from urllib.parse import quote")
    names = {"HttpUser", "task"}
    if (plan.tasks and any(t.tags for t in plan.tasks)) or any(f.tags for f in plan.flows):
        names.add("tag")
    if plan.flows:
        names |= {"SequentialTaskSet", "constant"}
    names.add("constant" if plan.wait == (0, 0) else "between")
    locust = lines(Code(", ".join(sorted(names, key=lambda n: (not n[0].isupper(), n)))), 0, "from locust import ")
    if len(locust) > 1 or len(locust[0]) > pysource.WIDTH:
        locust = [
            "from locust import (",
            *[f"    {n}," for n in sorted(names, key=lambda n: (not n[0].isupper(), n))],
            ")",
        ]
    return [*standard, *([""] if standard else []), *locust]


def _user(plan: Plan) -> list[str]:
    out = [f"class {plan.user_class}(HttpUser):"]
    out += comment(plan.host_comment, 1)
    out += lines(plan.host if plan.host is not None else Code("None"), 1, "host = ")
    low, high = plan.wait
    wait = "constant(0)" if (low, high) == (0, 0) else f"between({_number(low)}, {_number(high)})"
    out.append(f"    wait_time = {wait}")
    on_session = [c for c in plan.credentials if not c.per_request]
    if on_session:
        out += ["", "    def on_start(self):"]
        for credential in on_session:
            out += _credential(credential)
    for task in plan.tasks:
        out += ["", *_task(task)]
    for flow in plan.flows:
        out += ["", *_flow(flow)]
    return out


def _number(value: float) -> str:
    return str(int(value)) if value == int(value) else repr(value)


def _credential(credential: Credential) -> list[str]:
    first = credential.variables[0]
    authorization = 'self.client.headers["Authorization"] = '
    if credential.kind == "basic":
        user, password = credential.variables
        arguments: list[tuple[str | None, object]] = [(None, Code(user)), (None, Code(password))]
        return [f"        if {user} or {password}:", *call("_basic", arguments, 3, authorization)]
    if credential.kind == "bearer":
        return [f"        if {first}:", *assignment(authorization, f'"Bearer " + {first}', 3)]
    if credential.kind == "cookie":
        arguments = [(None, credential.name), (None, Code(first))]
        return [f"        if {first}:", *call("self.client.cookies.set", arguments, 3)]
    target = {"header": "self.client.headers", "query": "self.client.params"}[credential.kind]
    return [f"        if {first}:", *assignment(f"{target}[{string(credential.name)}] = ", first, 3)]


def _value(credential: Credential) -> tuple[str, str | Code]:
    """(the condition that the credential is set, what goes in its header, parameter or cookie)."""
    first = credential.variables[0]
    if credential.kind == "basic":
        user, password = credential.variables
        return f"{user} or {password}", Code(f"_basic({user}, {password})")
    if credential.kind == "bearer":
        return first, Code(f'"Bearer " + {first}')
    return first, Code(first)


def _per_request(credential: Credential) -> list[str]:
    """The mapping a per-request credential's requests spread into their headers, query or cookies:
    empty when the credential is unset."""
    condition, value = _value(credential)
    return [
        f"{credential.constant} = {{}}",
        f"if {condition}:",
        *lines({credential.name: value}, 1, f"{credential.constant} = "),
    ]


def _with_credentials(plan: Plan) -> tuple[Plan, dict[str, list[str]]]:
    """The plan with each request's per-request credentials spread into its headers, query or cookies,
    and the mappings that choose among several ({name: the credentials' mappings, the first set wins})."""
    by_scheme = {c.scheme: c for c in plan.credentials if c.per_request}
    either: dict[str, list[str]] = {}

    def spread(request: Request) -> Request:
        headers, query, cookies = list(request.headers), list(request.query), list(request.cookies)
        for kind, target in (("header", headers), ("query", query), ("cookie", cookies)):
            chosen = [by_scheme[s] for s in request.credentials if s in by_scheme]
            constants = [c.constant for c in chosen if (c.kind if c.kind in ("query", "cookie") else "header") == kind]
            if not constants:
                continue
            name = constants[0]
            if len(constants) > 1:
                suffix = "_" + constants[0].rpartition("_")[2]  # _HEADERS, _PARAMS, _COOKIES
                name = "_OR_".join(c.removesuffix(suffix) for c in constants) + suffix
                either[name] = constants
            target.insert(0, (Spread(name), ""))
        return dataclasses.replace(request, headers=headers, query=query, cookies=cookies)

    tasks = [dataclasses.replace(t, request=spread(t.request)) for t in plan.tasks]
    flows = [
        dataclasses.replace(f, steps=[dataclasses.replace(s, request=spread(s.request)) for s in f.steps])
        for f in plan.flows
    ]
    return dataclasses.replace(plan, tasks=tasks, flows=flows), either


def _decorators(tags: list[str], weight: int, level: int) -> list[str]:
    indent = pysource.INDENT * level
    out = []
    if tags:
        out += call("@tag", [(None, t) for t in tags], level)
    out.append(f"{indent}@task" + (f"({weight})" if weight != 1 else ""))
    return out


def _task(task: Task) -> list[str]:
    out = _decorators(task.tags, task.weight, 1)
    out.append(f"    def {task.function}(self):")
    for text in task.comments:
        out += comment(text, 2)
    out += _request(task.request, 2)
    return out


def _arguments(request: Request, path: str | Code) -> list[tuple[str | None, object]]:
    arguments: list[tuple[str | None, object]] = [(None, path), ("name", request.name)]
    if request.query:
        arguments.append(("params", _pairs(request.query)))
    headers = list(request.headers)
    body = request.body
    if (body is not None and body.kind == "raw" and body.content_type) or (
        body is not None and body.kind == "json" and body.content_type not in ("", "application/json")
    ):
        headers.append(("Content-Type", body.content_type))
    if headers:
        arguments.append(("headers", _mapping(headers)))
    if request.cookies:
        arguments.append(("cookies", _mapping(request.cookies)))
    if body is not None:
        if body.kind == "json":
            arguments.append(("json", body.value))
        elif body.kind in ("form", "raw") or (body.kind == "multipart" and body.value):
            arguments.append(("data", body.value))
        if body.kind == "multipart" and body.files:
            names = [name for name, _ in body.files]
            if len(set(names)) == len(names):
                arguments.append(("files", dict(body.files)))
            else:
                arguments.append(("files", list(body.files)))
    return arguments


def _mapping(pairs: Sequence[tuple[str, object]]) -> object:
    """Headers or cookies as a dict; a per-request credential's mapping alone as its name."""
    if len(pairs) == 1 and isinstance(pairs[0][0], Spread):
        return Code(pairs[0][0])
    return dict(pairs)


def _pairs(pairs: Sequence[tuple[str, object]]) -> object:
    """Query parameters as a dict (the usual), or a list of pairs when a name repeats."""
    names = [k for k, _ in pairs]
    if len(set(names)) == len(names):
        return _mapping(pairs)
    return [(k, v) for k, v in pairs if not isinstance(k, Spread)]  # (a per-request credential: as a dict only)


def _request(request: Request, level: int, path: str | Code | None = None, prefix: str = "") -> list[str]:
    arguments = _arguments(request, request.path if path is None else path)
    return call(f"self.client.{request.method}", arguments, level, prefix)


def _caught(request: Request, level: int) -> list[str]:
    """`with self.client.<method>(..., catch_response=True) as response:`, for a step whose response
    gives values: one it lacks fails the request, with why, so that a journey that cannot go on shows
    in the failures (it ended quietly, and with no think time began again at once: a loop of its first
    request, 0 failures)."""
    arguments = [*_arguments(request, request.path), ("catch_response", True)]
    return call(f"self.client.{request.method}", arguments, level, "with ", " as response:")


def _lacking(attributes: list[str], whats: list[str], level: int) -> list[str]:
    """Inside the with-block: a response that succeeded is failed for each value (`self.<attribute>`) it
    lacks (one that failed keeps its own error: its status, a refused connection)."""
    indent = pysource.INDENT * level
    out: list[str] = []
    for attribute, what in zip(attributes, whats):
        message = f"no {what} in the response, so the flow ends here"
        test = f"{indent}if self.{attribute} is None and 0 < response.status_code < 400:"
        out += [test, *call("response.failure", [(None, message)], level + 1)]
    return out


def _ends_without(attributes: list[str], level: int) -> list[str]:
    """After the with-block: the journey ends when a value is missing."""
    indent = pysource.INDENT * level
    test = " or ".join(f"self.{a} is None" for a in attributes)
    return [f"{indent}if {test}:", f"{indent}{pysource.INDENT}{INTERRUPT}"]


# A flow's end hands the user back to its tasks after the user's own wait_time: `interrupt()` would pick
# the next task at once (Locust's reschedule=True), so that a journey with `--wait 5` ran back to back.
INTERRUPT = "self.interrupt(reschedule=False)"


def _flow(flow: Flow) -> list[str]:
    out = _decorators(flow.tags, flow.weight, 1)
    out.append(f"    class {flow.class_name}(SequentialTaskSet):")
    for text in flow.comments:
        out += comment(text, 2)
    out.append("        wait_time = constant(0)  # its steps back to back; the user's wait_time after it")
    for i, step in enumerate(flow.steps):
        out += ["", *_step(flow, step, last=i == len(flow.steps) - 1)]
    return out


def _step(flow: Flow, step: Step, last: bool) -> list[str]:
    out = ["        @task", f"        def {step.function}(self):"]
    for text in step.comments:
        out += comment(text, 3)
    if step.think:
        out.append(f"            time.sleep({_number(round(step.think, 3))})")
    if step.captures:
        out += _caught(step.request, 3)
        for capture in step.captures:
            out += _capture(capture)
        attributes = [c.attribute for c in step.captures]
        out += _lacking(attributes, [_what(c) for c in step.captures], 4)
        out += _ends_without(attributes, 3)
        if last and flow.interrupt:
            out.append(f"            {INTERRUPT}")
        return out
    attribute = f"self.{flow.attribute}"
    if step.capture is not None:
        out += _caught(step.request, 3)
        out += call("_field", [(None, Code("response")), *[(None, key) for key in step.capture]], 4, f"{attribute} = ")
        out += _lacking([flow.attribute], [f"JSON field {'/'.join(step.capture)}"], 4)
        out += _ends_without([flow.attribute], 3)
        return out
    path: str | Code = step.request.path
    if step.uses is not None:
        value = attribute
        if flow.quoted:
            out += call("quote", [(None, Code(f"str({attribute})")), ("safe", "")], 3, f"{flow.attribute} = ")
            value = flow.attribute
        path = Code("f" + string(_filled(step.request, step.uses, value)))
    out += _request(step.request, 3, path)
    if last and flow.interrupt:
        out.append(f"            {INTERRUPT}")
    return out


def _capture(capture: Capture) -> list[str]:
    """`self.<attribute> = ` the value from the response (in the step's with-block)."""
    target = f"self.{capture.attribute} = "
    out = comment(capture.comment, 4) if capture.comment else []
    if capture.source == "json":
        out += call("_json", [(None, Code("response")), *[(None, key) for key in capture.key]], 4, target)
    elif capture.source == "header":
        out += call("response.headers.get", [(None, capture.key[0])], 4, target)
    elif capture.source == "cookie":
        out += call("self.client.cookies.get", [(None, capture.key[0])], 4, target)
    else:
        out += call("_hidden", [(None, Code("response")), (None, capture.key[0])], 4, target)
    return out


def _what(capture: Capture) -> str:
    """The value a capture takes, as its failure names it."""
    key = capture.key[0]
    return {
        "json": f"JSON field {'/'.join(capture.key)}",
        "header": f"header {key}",
        "cookie": f"cookie {key}",
    }.get(capture.source, f"hidden form field {key}")


def _filled(request: Request, parameter: str, expression: str) -> str:
    """The request's path template with `parameter` as `{expression}` and the others as their values."""
    text = request.template
    for name, value in request.path_values.items():
        literal = value.replace("{", "{{").replace("}", "}}")
        text = text.replace("{" + name + "}", "{" + expression + "}" if name == parameter else literal)
    return text

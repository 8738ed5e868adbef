"""Postman collections (v2.1, and v2.0 where it is the same) as load tests: `squall import postman`.

The policy, and why:

- A request at the top of the collection is a task of its own; a folder is a SequentialTaskSet whose
  requests (its subfolders' included, in the collection's order) run in order, as a Postman run of the
  folder would. Folder and request names become the class and function names; the statistics name is
  the URL's path with Postman's path variables (`:id`) and `{{variables}}` written as `{id}`.
- `{{variables}}` are filled from the environment file (`--environment`), then the collection's own
  variables, as Postman's precedence has it; one that neither gives a value (or names another such) is
  a module-level constant read from an environment variable the file names at its top, so nothing is
  guessed and the file runs as it is. Values the environment file gives, its secrets included, are
  written as they are (the docs say to keep such a file private, or empty the value). Postman's
  dynamic variables are made anew for each request, as Postman makes them, where their meaning is
  fixed (`DYNAMIC`: `{{$guid}}`, `{{$timestamp}}`, `{{$randomInt}}`...); the faker ones (a random
  e-mail, a city) go as written, and the summary says which.
- The URL in either form (a string, or the object with `host`, `path`, `query`, `variable`; query
  values decoded, since Postman keeps them as sent and the client encodes them again); headers
  as a list or as Postman's `Key: value` text; disabled headers, query parameters and form fields are
  not sent. Bodies: raw (JSON when it is JSON, sent as `json=`; other text as it is, with its
  Content-Type), urlencoded, formdata (text fields; a file field is sent empty, named as the collection
  names it: its file is on someone else's disk) and GraphQL (`{"query", "variables"}` as JSON).
- Auth at the collection, folder or request level, the nearest one winning, `noauth` meaning none
  (and `inherit`, or none given, the parent's): bearer, basic, API key (header or query), OAuth 2 with
  an access token (as a bearer token). Other kinds (digest, OAuth 1, AWS, Hawk, NTLM...) need a
  handshake or a signature squall would have to compute per request: the request goes without, and
  the summary says so.
- Scripts (`pm.*` pre-request and test scripts) are JavaScript for Postman's sandbox and are not run:
  each request that has one says so in a comment, and the summary counts them. A variable a script
  would have set is an unresolved variable (above).
"""

from __future__ import annotations

import base64
import json
import os
import re
from typing import Any
from urllib.parse import unquote, urlsplit

from squall.importers import Options, pysource, sources
from squall.importers.openapi.operations import class_name, identifier
from squall.importers.plan import Body, Flow, Plan, Request, Step, Task, Variable
from squall.importers.pysource import Code

VARIABLE = re.compile(r"\{\{([^{}]+)\}\}")
# Postman's dynamic variables whose values are defined (its docs): the generated file's `_dynamic` makes
# them per request (squall.importers.emit DYNAMIC_HELPER).
DYNAMIC = {
    "$guid": "_guid",
    "$randomUUID": "_guid",
    "$timestamp": "_timestamp",
    "$isoTimestamp": "_iso_timestamp",
    "$randomInt": "_random_int",
    "$randomBoolean": "_random_boolean",
}
MAX_DEPTH = 10  # a variable naming another, naming another...: Postman itself stops resolving early
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS")


class Reader:
    """One collection read: its variables, the constants the file reads from the environment, what is noted."""

    def __init__(self, collection: dict[str, Any], environment: dict[str, Any] | None, name: str) -> None:
        self.name = name
        self.values: dict[str, str] = {}
        for source in (sources.list_at(collection, "variable"), sources.list_at(environment, "values")):
            for v in source:
                if isinstance(v, dict) and isinstance(v.get("key"), str) and v.get("disabled") is not True:
                    if v.get("enabled") is False:
                        continue
                    value = v.get("value")
                    if value is None or value == "":
                        continue  # without a value: the user's to give (an environment variable)
                    self.values[v["key"]] = value if isinstance(value, str) else json.dumps(value)
        self.constants: dict[str, str] = {}  # Postman's name -> the module constant
        self.variables: list[Variable] = []
        self.dynamic: set[str] = set()
        self.unsent_auth: set[str] = set()
        self.scripts = 0
        self.helpers: set[str] = set()
        self.taken: set[str] = set()

    # -- variables -------------------------------------------------------------------------------

    def resolved(self, text: str) -> str:
        """`text` with every variable that has a value filled in (what remains: `{{name}}`)."""
        for _ in range(MAX_DEPTH):
            new: str = VARIABLE.sub(lambda m: self.values.get(m.group(1).strip(), m.group(0)), text)
            if new == text:
                break
            text = new
        return text

    def constant(self, name: str) -> str:
        if name not in self.constants:
            candidate = re.sub(r"[^A-Za-z0-9]+", "_", re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)).strip("_").upper()
            candidate = candidate or "VARIABLE"
            if candidate[0].isdigit():
                candidate = "V_" + candidate
            base, n = candidate, 2
            while candidate in self.constants.values():
                candidate, n = f"{base}_{n}", n + 1
            self.constants[name] = candidate
            self.variables.append(Variable(candidate, comment=f"{{{{{name}}}}}: no value in the collection"))
        return self.constants[name]

    def value(self, given: Any) -> str | Code:
        """`given` resolved: a string, or an f-string (Code) reading the constants of what is unresolved
        and making the dynamic variables it names (`DYNAMIC`)."""
        text = self.resolved(given if isinstance(given, str) else "" if given is None else json.dumps(given))
        names = [m.group(1).strip() for m in VARIABLE.finditer(text)]
        unresolved = [n for n in names if not n.startswith("$") or n in DYNAMIC]
        self.dynamic.update("{{" + n + "}}" for n in names if n.startswith("$") and n not in DYNAMIC)
        if not unresolved:
            return text
        if any(n in DYNAMIC for n in names):
            self.helpers.add("_dynamic")
        whole = VARIABLE.fullmatch(text)
        if whole is not None:
            return Code(self.code(whole.group(1).strip()))
        parts, last = [], 0
        for m in VARIABLE.finditer(text):
            parts.append(_braces(text[last : m.start()]))
            name = m.group(1).strip()
            is_written = name.startswith("$") and name not in DYNAMIC
            parts.append(_braces(m.group(0)) if is_written else "{" + self.code(name) + "}")
            last = m.end()
        parts.append(_braces(text[last:]))
        return Code("f" + _quoted("".join(parts)))

    def code(self, name: str) -> str:
        """The expression of variable `name`: a dynamic one made per request, else its constant."""
        return f"{DYNAMIC[name]}()" if name in DYNAMIC else self.constant(name)

    # -- requests ------------------------------------------------------------------------------------

    def request(self, item: dict[str, Any], auth: Any) -> tuple[str | None, Request, list[str]]:
        """(the origin of its URL when it names one, the request with its path, the notes on it)."""
        raw = item.get("request")
        request: dict[str, Any] = raw if isinstance(raw, dict) else {"url": raw, "method": "GET"}
        notes: list[str] = []
        method = str(request.get("method") or "GET").upper()
        if method not in METHODS:
            raise ValueError(f"its method {method} is not one squall sends")
        origin, url, name, query = self.url(request.get("url"))
        headers: list[tuple[str, Any]] = []
        for key, value in _headers(request.get("header")):
            headers.append((key, self.value(value)))
        body, body_notes = self.body(request.get("body"), headers)
        notes += body_notes
        if body is not None and body.kind == "multipart" and any(k.lower() == "content-type" for k, _ in headers):
            headers = [(k, v) for k, v in headers if k.lower() != "content-type"]
            notes.append("Its Content-Type is left to the client, which writes the multipart boundary")
        own = request.get("auth")
        if isinstance(own, dict) and own.get("type") != "inherit":
            auth = own
        for where, key, value in self.auth(auth, notes):
            (headers if where == "header" else query).append((key, value))
        if _has_scripts(item):
            self.scripts += 1
            notes.append("Its Postman scripts (pre-request or tests) are not run")
        request_ = Request(method=method.lower(), path=url, name=name, query=query, headers=headers, body=body)
        return origin, request_, notes

    def url(self, node: Any) -> tuple[str | None, Any, str, list[tuple[str, Any]]]:
        """(its origin when it names one; the path after it, or the whole URL; the statistics name; the
        query's pairs)."""
        query: list[tuple[str, Any]] = []
        variables: dict[str, str] = {}
        if isinstance(node, dict):
            for v in sources.list_at(node, "variable"):
                if isinstance(v, dict) and isinstance(v.get("key"), str) and v.get("disabled") is not True:
                    variables[v["key"]] = "" if v.get("value") is None else str(v.get("value"))
            for q in sources.list_at(node, "query"):
                if isinstance(q, dict) and q.get("disabled") is not True and q.get("key") is not None:
                    value = q.get("value")
                    query.append((unquote(self.resolved(str(q["key"]))), self.value(_unquoted(value))))
            host = node.get("host")
            if isinstance(host, list):
                host = ".".join(str(h) for h in host)
            path = node.get("path")
            if isinstance(path, list):
                path = "/".join(
                    str(p.get("value", "")) if isinstance(p, dict) else str(p) for p in path if p is not None
                )
            if isinstance(host, str) and host:
                protocol = str(node.get("protocol") or "")
                port = f":{node['port']}" if node.get("port") not in (None, "") else ""
                raw = (f"{protocol}://" if protocol else "") + host + port + ("/" + str(path or "").lstrip("/"))
            else:
                raw = str(node.get("raw") or "").split("#", 1)[0]
            if "query" not in node and "?" in str(node.get("raw") or ""):  # only the raw form says it
                for pair in str(node["raw"]).split("#", 1)[0].split("?", 1)[1].split("&"):
                    key, _, value = pair.partition("=")
                    if key:
                        query.append((unquote(self.resolved(key)), self.value(unquote(value))))
            raw = raw.split("?", 1)[0]
        elif isinstance(node, str):
            raw, _, text = node.partition("#")[0].partition("?")
            for pair in text.split("&") if text else []:
                key, _, value = pair.partition("=")
                query.append((unquote(self.resolved(key)), self.value(unquote(value))))
        else:
            raise ValueError("it has no URL")
        if not raw.strip():
            raise ValueError("it has no URL")
        raw = raw.strip()
        # Postman's path variables, `:name` as a whole segment, filled from the URL's own `variable`
        template = re.sub(r"(?<=/):([A-Za-z_][\w-]*)", lambda m: "{" + m.group(1) + "}", raw)
        filled = re.sub(
            r"(?<=/):([A-Za-z_][\w-]*)", lambda m: variables.get(m.group(1), m.group(0)).replace("\\", "/"), raw
        )
        text = self.resolved(filled)
        if "://" not in text.split("{{", 1)[0] and not text.startswith("{{"):
            text = "http://" + text  # Postman's own default for a URL without a scheme
        split = urlsplit(text)
        # The name keeps the path's variables as `{name}`, with a value or not (`/orders/{orderId}`, not
        # `/orders/1001`): only a leading variable (the base URL's, its path kept) is filled in.
        lead = re.match(r"\{\{[^{}]+\}\}", template)
        named = template if lead is None else self.resolved(template[: lead.end()]) + template[lead.end() :]
        if "://" not in named.split("{{", 1)[0] and not named.startswith(("{{", "/")):
            named = "http://" + named  # (as the URL: a host typed without its scheme is no part of the name)
        name = _name(named)
        if split.scheme in ("http", "https") and split.netloc and "{{" not in split.netloc:
            origin = f"{split.scheme}://{split.netloc}"
            return origin, self.value(text[len(origin) :] or "/"), name, query
        if split.scheme not in ("", "http", "https") and "{{" not in split.scheme:
            raise ValueError(f"its URL's scheme {split.scheme} is not HTTP")
        return None, self.value(text), name, query

    def body(self, node: Any, headers: list[tuple[str, Any]]) -> tuple[Body | None, list[str]]:
        if not isinstance(node, dict) or node.get("disabled") is True:
            return None, []
        mode = node.get("mode")
        if mode == "raw":
            text = node.get("raw")
            if not isinstance(text, str) or not text:
                return None, []
            resolved = self.resolved(text)
            language = str(sources.dict_at(sources.dict_at(node, "options"), "raw").get("language") or "")
            declared = next((str(v) for k, v in headers if k.lower() == "content-type"), "")
            if "{{" not in resolved and (language == "json" or "json" in declared or not declared):
                try:
                    return Body("json", json.loads(resolved)), []
                except ValueError:
                    pass
            if not declared:
                kind = {"json": "application/json", "xml": "application/xml", "html": "text/html"}
                content_type = kind.get(language, "text/plain")
                return Body("raw", self.value(text), content_type=content_type), []
            return Body("raw", self.value(text)), []
        if mode == "urlencoded":
            pairs = [
                (self.resolved(str(p["key"])), self.value(p.get("value")))
                for p in sources.list_at(node, "urlencoded")
                if isinstance(p, dict) and p.get("disabled") is not True and p.get("key") is not None
            ]
            names = [k for k, _ in pairs]
            return Body("form", dict(pairs) if len(set(names)) == len(names) else pairs), []
        if mode == "formdata":
            fields: dict[str, Any] = {}
            files: list[tuple[str, tuple[str, bytes, str]]] = []
            notes = []
            for p in sources.list_at(node, "formdata"):
                if not isinstance(p, dict) or p.get("disabled") is True or p.get("key") is None:
                    continue
                key = self.resolved(str(p["key"]))
                if p.get("type") == "file":
                    src = p.get("src")
                    src = src[0] if isinstance(src, list) and src else src
                    filename = os.path.basename(str(src)) if isinstance(src, str) and src else key
                    files.append((key, (filename, b"", str(p.get("contentType") or "application/octet-stream"))))
                    notes.append(
                        f"The file field {key} is sent empty (the collection names {filename!r}, not its bytes)"
                    )
                else:
                    fields[key] = self.value(p.get("value"))
            if not files:
                # requests writes multipart only with files=: a field with no filename is a plain field
                files = [(k, (None, v, None)) for k, v in fields.items()]  # type: ignore[misc]
                fields = {}
            return Body("multipart", fields, files=files), notes
        if mode == "graphql":
            graphql = sources.dict_at(node, "graphql")
            query = self.resolved(str(graphql.get("query") or ""))
            variables_text = graphql.get("variables")
            payload: dict[str, Any] = {"query": query}
            if isinstance(variables_text, str) and variables_text.strip():
                try:
                    payload["variables"] = json.loads(self.resolved(variables_text))
                except ValueError:
                    return Body("json", payload), ["Its GraphQL variables are not JSON: sent without them"]
            elif isinstance(variables_text, dict):
                payload["variables"] = variables_text
            return Body("json", payload), []
        if mode == "file":
            return None, ["Its body is a file on the collection author's disk: sent without a body"]
        return None, []

    def auth(self, node: Any, notes: list[str]) -> list[tuple[str, str, Any]]:
        """(where: "header" or "query", name, value) for the auth in force."""
        if not isinstance(node, dict):
            return []
        kind = node.get("type")
        if kind in (None, "noauth", "inherit"):
            return []
        fields = _auth_fields(node.get(kind))
        if kind == "bearer":
            token = self.value(fields.get("token", ""))
            return [("header", "Authorization", _joined("Bearer ", token))]
        if kind == "oauth2" and fields.get("accessToken"):
            prefix = str(fields.get("headerPrefix") or "Bearer")
            token = self.value(fields["accessToken"])
            if fields.get("addTokenTo") == "queryParams":
                return [("query", "access_token", token)]
            return [("header", "Authorization", _joined(prefix + " ", token))]
        if kind == "basic":
            user, password = self.value(fields.get("username", "")), self.value(fields.get("password", ""))
            if isinstance(user, Code) or isinstance(password, Code):
                self.helpers.add("_basic")
                return [("header", "Authorization", Code(f"_basic({_plain(user)}, {_plain(password)})"))]
            encoded = base64.b64encode(f"{user}:{password}".encode()).decode()
            return [("header", "Authorization", "Basic " + encoded)]
        if kind == "apikey":
            key = self.resolved(str(fields.get("key") or ""))
            value = self.value(fields.get("value", ""))
            if not key:
                notes.append("Its API key auth names no key: not sent")
                return []
            return [("query" if fields.get("in") == "query" else "header", key, value)]
        self.unsent_auth.add(str(kind))
        notes.append(f"Its {kind} auth is not sent (squall does not compute it)")
        return []


def _unquoted(value: Any) -> Any:
    """A query value as Postman writes it (percent-encoded as sent), decoded: the client encodes it again."""
    return unquote(value) if isinstance(value, str) else value


def _auth_fields(node: Any) -> dict[str, Any]:
    """v2.1's list of {key, value}, or v2.0's mapping."""
    if isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for v in node if isinstance(node, list) else []:
        if isinstance(v, dict) and isinstance(v.get("key"), str):
            out[v["key"]] = v.get("value")
    return out


def _headers(node: Any) -> list[tuple[str, Any]]:
    if isinstance(node, str):
        pairs = [line.partition(":") for line in node.splitlines()]
        return [(k.strip(), v.strip()) for k, sep, v in pairs if sep and k.strip()]
    out = []
    for h in node if isinstance(node, list) else []:
        if isinstance(h, dict) and h.get("disabled") is not True and isinstance(h.get("key"), str) and h["key"]:
            out.append((h["key"], h.get("value")))
    return out


def _has_scripts(item: dict[str, Any]) -> bool:
    for event in sources.list_at(item, "event"):
        script = sources.dict_at(event, "script")
        lines = script.get("exec")
        if (isinstance(lines, list) and any(isinstance(x, str) and x.strip() for x in lines)) or (
            isinstance(lines, str) and lines.strip()
        ):
            return True
    return False


def _scripted_folders(collection: dict[str, Any]) -> list[str]:
    """The collection and the folders whose own scripts (run before or after each request) are not run."""
    out = ["the collection's"] if _has_scripts(collection) else []
    stack = list(sources.list_at(collection, "item"))
    while stack:
        item = stack.pop(0)
        if isinstance(item, dict) and isinstance(item.get("item"), list):
            if _has_scripts(item):
                out.append(f"the folder {item.get('name')!r}'s")
            stack += item["item"]
    return out


def _braces(text: str) -> str:
    return text.replace("{", "{{").replace("}", "}}")


def _quoted(text: str) -> str:
    from squall.importers.pysource import string  # (a leaf: no start-up cost, kept beside its use)

    return string(text)


def _plain(value: str | Code) -> str:
    from squall.importers.pysource import string  # (a leaf: no start-up cost, kept beside its use)

    return str(value) if isinstance(value, Code) else string(value)


def _joined(prefix: str, value: str | Code) -> str | Code:
    """`prefix` and `value`, one string, or the expression that joins them."""
    if isinstance(value, Code):
        return Code(f"{_quoted(prefix)} + {value}")
    return prefix + value


def _name(template: str) -> str:
    """The statistics name: the path, `{{x}}` as `{x}` (a host variable dropped with its host)."""
    text = template.split("?", 1)[0]
    if "://" in text:
        text = text.split("://", 1)[1]
        text = "/" + text.partition("/")[2]
    elif text.startswith("{{"):
        text = "/" + text.partition("/")[2]
    text = VARIABLE.sub(lambda m: "{" + m.group(1).strip() + "}", text)
    return text or "/"


def _flatten(items: list[Any], auth: Any, path: list[str]) -> list[tuple[dict[str, Any], Any, list[str]]]:
    """The requests under `items`, in order: (item, the auth in force, the folders it is in)."""
    out = []
    for item in items:
        if not isinstance(item, dict):
            continue
        if isinstance(item.get("item"), list):
            folder_auth = item["auth"] if isinstance(item.get("auth"), dict) else auth
            if isinstance(item.get("auth"), dict) and item["auth"].get("type") == "inherit":
                folder_auth = auth
            out += _flatten(item["item"], folder_auth, [*path, str(item.get("name") or "folder")])
        elif "request" in item:
            out.append((item, auth, path))
    return out


def plan(location: str, options: Options, environment: str | None = None) -> Plan:
    """The load test for the Postman collection at `location`; SourceError for one that cannot be read."""
    source = sources.read(location)
    collection = source.value
    name = os.path.basename(location)
    if not isinstance(collection, dict):
        raise sources.SourceError(f"{name} is not a Postman collection (its top level is not an object)")
    if isinstance(collection.get("log"), dict):
        raise sources.SourceError(f"{name} is a HAR file, not a Postman collection: squall import har")
    if "openapi" in collection or "swagger" in collection:
        raise sources.SourceError(f"{name} is an OpenAPI document: squall import openapi")
    if isinstance(collection.get("requests"), list) and "item" not in collection:
        raise sources.SourceError(f"{name} is a Postman collection v1: export it as v2.1 from Postman")
    info = sources.dict_at(collection, "info")
    if not info or not isinstance(collection.get("item"), list):
        raise sources.SourceError(f"{name} is not a Postman collection v2 (no info and item list)")
    schema = str(info.get("schema") or "")
    version = "v2.1" if "v2.1" in schema else "v2.0" if "v2.0" in schema else "v2"
    env: dict[str, Any] | None = None
    if environment is not None:
        env_value = sources.read(environment).value
        if not isinstance(env_value, dict) or not isinstance(env_value.get("values"), list):
            raise sources.SourceError(f"{environment} is not a Postman environment (no values list)")
        env = env_value
    reader = Reader(collection, env, name)
    requests = _flatten(collection["item"], collection.get("auth"), [])
    built: list[tuple[dict[str, Any], str | None, Request, list[str], list[str]]] = []
    left_out: list[tuple[str, str]] = []
    hosts: list[str] = []
    for item, auth, folders in requests:
        label = " / ".join([*folders, str(item.get("name") or "request")])
        try:
            origin, request, notes = reader.request(item, auth)
        except (ValueError, TypeError, AttributeError, KeyError, IndexError, OverflowError) as e:
            left_out.append((label, str(e) if isinstance(e, ValueError) else f"it is malformed ({type(e).__name__})"))
            continue
        if origin is not None:
            hosts.append(origin)
        built.append((item, origin, request, notes, folders))
    host = hosts[0] if hosts else None
    classes = {"SequentialTaskSet", "HttpUser"}
    tasks: list[Task] = []
    flows: dict[str, Flow] = {}
    names: set[str] = set()
    flow_names: dict[str, set[str]] = {}
    for item, origin, request, notes, folders in built:
        if origin is not None and origin != host:
            request.path = _joined(origin, request.path)  # another host: the whole URL
        title = str(item.get("name") or request.name)
        summary = f"{request.method.upper()} {request.name}: {title}"
        comments = [summary, *(n[:1].upper() + n[1:] + "." for n in notes)]
        if not folders:
            tasks.append(Task(identifier(title, names), request, comments))
            continue
        top = folders[0]
        if top not in flows:
            flows[top] = Flow(
                class_name(top, "Folder", classes),
                attribute="",
                steps=[],
                comments=[f"The folder {top!r}: its requests in order, as a run of the folder sends them."],
                quoted=False,
            )
            flow_names[top] = {"interrupt", "parent", "user", "tasks", "schedule_task", "wait_time", "run", "wait"}
        where = " / ".join(folders[1:])
        if where:
            comments[0] += f" (in {where})"
        flows[top].steps.append(Step(identifier(title, flow_names[top]), request, comments))
    title = str(info.get("name") or name or "Collection")
    result = Plan(
        user_class=class_name(title, "User", classes),
        about=[],
        host=host,
        host_comment=(
            "The first request's origin in the collection; -H replaces it."
            if host
            else "The collection's URLs name no host squall can tell: give it with -H."
        ),
        tasks=tasks,
        flows=list(flows.values()),
        left_out=left_out,
        wait=options.wait,
        variables=reader.variables,
        noun="request",
        helpers=sorted(reader.helpers),
    )
    folders_with_scripts = _scripted_folders(collection)
    if reader.scripts or folders_with_scripts:
        scripted = [f"{reader.scripts} request{'' if reader.scripts == 1 else 's'}"] if reader.scripts else []
        scripted += folders_with_scripts
        result.notes.append(
            f"Postman scripts (pre-request or tests) not run: {', '.join(scripted)};"
            " a value a script would set is a variable read from the environment"
        )
    if reader.unsent_auth:
        result.notes.append("auth not sent (squall does not compute it): " + ", ".join(sorted(reader.unsent_auth)))
    if reader.dynamic:
        result.notes.append("dynamic variables sent as written: " + ", ".join(sorted(reader.dynamic)))
    unset = [c.name for c in reader.variables if not c.default]
    if unset:
        result.notes.append(
            "variables without a value, read from these environment variables (sent empty while unset): "
            + ", ".join(unset)
        )
    result.about = _about(result, title, name, version, options)
    return result


def _about(result: Plan, title: str, name: str, version: str, options: Options) -> list[str]:

    paragraphs = [
        f"{title}: a Locust load test made by squall import postman.",
        f"From {name} (Postman collection {version}): {result.tally()}"
        + (" (listed at the end of this file)." if result.left_out else ".")
        + " A request at the top of the collection is a task; a folder is a SequentialTaskSet that sends"
        " its requests in order.",
        "Postman's scripts (pre-request and tests) are not run: what they would check or set is not"
        " checked or set here. Variables are filled from the environment file and the collection;"
        " those without a value are read from environment variables named below.",
        *result.notes,
        f"Runs unchanged with squall (squall -f {options.output}) and Locust (locust -f {options.output}).",
    ]
    return pysource.docstring(paragraphs)

"""HAR recordings (HAR 1.2, from Chrome, Edge, Firefox or Playwright) as load tests: `squall import har`.

The policy, and why:

- The journey, in order: the entries sorted by `startedDateTime` make one SequentialTaskSet; each page
  (`pageref`) starts with a comment naming it. Before a request the user waits the gap the recording
  had between the end of the previous kept request and its start (`time.sleep`), when that gap is at
  least `MIN_THINK` seconds: shorter gaps are the browser's own pace (parallel fetches), not a person's.
  A longer gap than `MAX_THINK` (the tab left open) is cut to it.
- The main host is the host of the first document (an HTML response, or Chrome's `_resourceType`
  "document"), else of the first entry. Requests elsewhere (third-party hosts: analytics, CDNs) and
  static files (images, CSS, scripts, fonts, media: by mimeType, Chrome's `_resourceType`, or the
  path's extension) are left out unless `--keep-hosts` / `--keep-static`: a load test of an
  application measures its server, not the browser's cache and other people's servers. Entries that
  never got an answer (status 0: blocked, cancelled), other schemes (data:, blob:, ws:) and CORS
  preflights (OPTIONS with Access-Control-Request-Method: a load test's client needs none) are left out.
- A redirect is followed by the client (requests and Locust follow them), so the request the browser
  made to a 3xx's target right after it is left out, and what that target's response gives (a form's
  hidden field) is taken from the redirecting step's final response.
- One SequentialTaskSet for the whole recording, not one per page: values taken on one page are sent
  on the next, and a user picks among sibling task sets at random, not in order.
- Headers the browser or the HTTP client manages are dropped: HTTP/2 pseudo-headers (`:path`), Host,
  Content-Length, Connection, Accept-Encoding, Cookie (the session's cookie jar sends what the server
  sets during the run; a cookie no response of the journey set, one a script or an earlier visit did,
  goes as recorded with `cookies=`), `sec-*`, User-Agent, Origin and Referer (they name the recorded host), the cache's
  conditionals (If-None-Match, If-Modified-Since), Cache-Control, Pragma, Priority. The rest (Accept,
  Content-Type, Authorization, X-...) is sent as recorded.
- Bodies: JSON when the postData is JSON (`json=`), a form as its pairs (Firefox's `params` or the
  `text`, Chrome writes both), multipart from its params (a file's bytes are not in a HAR: sent empty,
  named as recorded), other text as it is with its Content-Type. Response bodies are read as recorded,
  base64 (`encoding`) decoded, for the correlation below.
- Correlation: a value a response returned (a JSON field, a header, a cookie it set, a hidden form
  field) that a later request sent (in its path, query, a header such as `Authorization: Bearer X` or
  `X-CSRF-Token`, or its body) is taken from that response at run time instead of replayed: a new
  login's token, a new CSRF value, the id a list returned. Only values of at least `MIN_VALUE` characters
  that the journey had not sent before that response count, and only where they stand alone (not a
  piece of a longer word or number): shorter ones (`1`, `true`, `en`) match by coincidence. A value
  not found at run time ends the journey there (its requests would only be refused).
- Statistics names are route templates: a correlated path segment is named after its value's source
  (`/items/{item_id}`), and numbers, UUIDs and long hex ids are `{id}`, so that `/items/1` and
  `/items/2` are one row.
"""

from __future__ import annotations

import base64
import json
import os
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any
from urllib.parse import parse_qsl, quote, unquote, urljoin, urlsplit

from squall.importers import Options, pysource, sources
from squall.importers.openapi.operations import class_name, identifier
from squall.importers.plan import Body, Capture, Flow, Plan, Request, Step
from squall.importers.pysource import Code, string

RESERVED = {
    "interrupt",
    "user",
    "client",
    "parent",
    "tasks",
    "schedule_task",
    "wait",
    "wait_time",
    "on_start",
    "on_stop",
    "run",
    "environment",
    "min_wait",
    "max_wait",
    "wait_function",
}
MIN_THINK = 0.1  # seconds: a shorter gap between requests is not a person's think time
MAX_THINK = 60.0  # seconds: a longer gap (the tab left open) is cut to this
MIN_VALUE = 6  # characters: a shorter value is too likely the same by coincidence to be correlated
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS")
DROPPED = {
    "host",
    "content-length",
    "connection",
    "keep-alive",
    "accept-encoding",
    "cookie",
    "user-agent",
    "origin",
    "referer",
    "if-none-match",
    "if-modified-since",
    "cache-control",
    "pragma",
    "priority",
    "upgrade-insecure-requests",
    "te",
    "dnt",
}
STATIC_TYPES = ("image/", "text/css", "font/", "audio/", "video/", "application/font", "application/x-font")
STATIC_SCRIPT = ("javascript", "ecmascript")
STATIC_RESOURCES = {"image", "stylesheet", "script", "font", "media", "manifest", "texttrack"}
STATIC_EXTENSIONS = {
    "png",
    "jpg",
    "jpeg",
    "gif",
    "svg",
    "ico",
    "webp",
    "avif",
    "bmp",
    "css",
    "js",
    "mjs",
    "map",
    "woff",
    "woff2",
    "ttf",
    "otf",
    "eot",
    "mp4",
    "webm",
    "mp3",
    "ogg",
    "wav",
}
# Response headers whose values are the server's plumbing, never a value the client sends back
PLUMBING = {
    "date",
    "content-type",
    "content-length",
    "server",
    "connection",
    "keep-alive",
    "vary",
    "cache-control",
    "expires",
    "last-modified",
    "etag",
    "content-encoding",
    "transfer-encoding",
    "set-cookie",
    "access-control-allow-origin",
    "access-control-allow-headers",
    "access-control-allow-methods",
    "strict-transport-security",
    "x-content-type-options",
    "x-frame-options",
    "age",
    "accept-ranges",
}
UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
HEX = re.compile(r"^(?=.*\d)[0-9a-fA-F]{12,}$")
INPUT = re.compile(r"<input\b[^>]*>", re.IGNORECASE)
ATTRIBUTE = re.compile(r"""([\w-]+)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+))""")


@dataclass
class Entry:
    """One recorded exchange, as much of it as the plan needs."""

    index: int
    started: float  # seconds since the epoch
    duration: float  # seconds
    method: str
    url: str
    origin: str
    host: str
    path: str
    query: list[tuple[str, str]]
    headers: list[tuple[str, str]]
    body: Body | None
    status: int
    mime: str
    resource: str  # Chrome's _resourceType, when given
    page: str
    response_headers: list[tuple[str, str]]
    response_cookies: list[tuple[str, str]]
    response_text: str
    cookies: list[tuple[str, str]] = field(default_factory=list)  # what the request's Cookie header sent
    redirect: str = ""  # where a 3xx response sent the browser, as an absolute URL
    followed: Entry | None = None  # the request the client makes itself by following `redirect`


@dataclass
class Source:
    """Where a value came from: the entry and how to take it from the response at run time."""

    entry: int
    kind: str  # json, header, cookie, hidden
    key: list[str]
    value: Any
    attribute: str = ""


@dataclass
class Journey:
    """What the reading found: the kept entries, the captures they make, what was left out."""

    kept: list[Entry] = field(default_factory=list)
    left_out: list[tuple[str, str]] = field(default_factory=list)


def plan(location: str, options: Options, keep_static: bool = False, keep_hosts: bool = False) -> Plan:
    """The load test for the HAR file at `location`; SourceError for one that cannot be read."""
    name = os.path.basename(location)
    log = _log(sources.read(location).value, name)
    pages = {
        str(p.get("id")): str(p.get("title") or p.get("id"))
        for p in sources.list_at(log, "pages")
        if isinstance(p, dict)
    }
    entries = []
    left_out: list[tuple[str, str]] = []
    for i, raw in enumerate(sources.list_at(log, "entries")):
        try:
            entries.append(_entry(i, raw))
        except (ValueError, TypeError, AttributeError, KeyError, IndexError, OverflowError) as error:
            label = _label_raw(raw, i)
            why = str(error) if isinstance(error, ValueError) else f"it is malformed ({type(error).__name__})"
            left_out.append((label, why))
    entries.sort(key=lambda e: (e.started, e.index))
    if not entries:
        raise sources.SourceError(
            f"{name} has no entry to import" + (f" ({left_out[0][0]}: {left_out[0][1]})" if left_out else "")
        )
    main = next((e for e in entries if _is_document(e)), entries[0])
    kept: list[Entry] = []
    for e in entries:
        label = f"{e.method} {e.url[:200]}"
        before = kept[-1] if kept else None
        if before is not None and before.redirect and before.followed is None and _same_url(before.redirect, e.url):
            # requests and Locust follow redirects themselves: the step before makes this request, and
            # what its response gives (a form's hidden field) is taken from that step's final response
            before.followed = e
            left_out.append((label, f"the client follows the redirect of {before.method} {before.path} to it"))
        elif e.method == "OPTIONS" and any(k.lower() == "access-control-request-method" for k, _ in e.headers):
            left_out.append((label, "a CORS preflight the browser made (a load test's client needs none)"))
        elif e.status == 0:
            left_out.append((label, "it got no answer in the recording (blocked or cancelled)"))
        elif e.host != main.host and not keep_hosts:
            left_out.append((label, f"another host than {main.host} (--keep-hosts keeps it)"))
        elif _is_static(e) and not keep_static:
            left_out.append((label, "a static file (--keep-static keeps it)"))
        else:
            kept.append(e)
    captures = _correlate(kept)
    steps, comments = _steps(kept, captures, main, pages)
    stale = sorted({k for s in steps for k in _recorded_credentials(s.request.headers)})
    classes = {"SequentialTaskSet", "HttpUser"}
    title = str(pages[kept[0].page]) if kept and kept[0].page in pages else ""
    if not title or "://" in title:  # Chrome titles a page with its URL
        title = (urlsplit(main.url).hostname or "recorded").removeprefix("www.")
    flow = Flow(
        class_name("journey", "", classes),
        attribute="",
        steps=steps,
        comments=comments,
        quoted=False,
    )
    creator = sources.dict_at(log, "creator")
    made_by = " ".join(str(creator.get(k) or "") for k in ("name", "version")).strip() or "an unnamed tool"
    result = Plan(
        user_class=class_name(title, "User", classes),
        about=[],
        host=main.origin,
        host_comment="The recording's main host (its first document's); -H replaces it.",
        flows=[flow] if steps else [],
        left_out=left_out,
        wait=options.wait,
        noun="request",
    )
    if stale:
        result.notes.append(
            f"credentials sent as recorded (no response of the journey gave them; they expire): {', '.join(stale)}"
        )
    n_captures = sum(len(c) for c in captures.values())
    result.about = _about(result, name, made_by, title, n_captures, options)
    return result


# Header names that carry a credential: one sent as recorded (not taken from a response at run time)
# is said, since a recorded token expires.
_CREDENTIAL = re.compile(r"^(authorization|proxy-authorization)$|token|api[-_]?key|secret|session", re.I)


def _recorded_credentials(headers: list[tuple[str, Any]]) -> list[str]:
    """The credential headers a request sends as recorded: literal text, not code reading a value a
    response of the journey gave (`Code`, an f-string)."""
    return [k for k, v in headers if isinstance(v, str) and not isinstance(v, Code) and _CREDENTIAL.search(k)]


def _log(value: Any, name: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise sources.SourceError(f"{name} is not a HAR file (its top level is not an object)")
    if "openapi" in value or "swagger" in value:
        raise sources.SourceError(f"{name} is an OpenAPI document: squall import openapi")
    if isinstance(value.get("item"), list) and isinstance(value.get("info"), dict):
        raise sources.SourceError(f"{name} is a Postman collection: squall import postman")
    log = value.get("log")
    if not isinstance(log, dict) or not isinstance(log.get("entries"), list):
        raise sources.SourceError(f"{name} is not a HAR file (no log.entries list)")
    return log


def _label_raw(raw: Any, i: int) -> str:
    request = raw.get("request") if isinstance(raw, dict) else None
    if isinstance(request, dict):
        return f"{request.get('method')} {str(request.get('url'))[:200]}"
    return f"entry {i + 1}"


TIME = re.compile(r"^(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d):(\d\d)(?:[.,](\d+))?(Z|[+-]\d\d:?\d\d)?$")


def _time(text: Any) -> float:
    """ISO 8601 as HARs write it (Chrome: ...123Z; Firefox: ...123+01:00), in seconds since the epoch."""
    m = TIME.match(str(text).strip())
    if m is None:
        raise ValueError(f"its startedDateTime {str(text)[:40]!r} is not a date and time")
    year, month, day, hour, minute, second = (int(g) for g in m.groups()[:6])
    fraction = float("0." + m.group(7)) if m.group(7) else 0.0
    zone = timezone.utc
    if m.group(8) and m.group(8) != "Z":
        sign = 1 if m.group(8)[0] == "+" else -1
        digits = m.group(8)[1:].replace(":", "")
        zone = timezone(sign * timedelta(hours=int(digits[:2]), minutes=int(digits[2:])))
    return datetime(year, month, day, hour, minute, second, tzinfo=zone).timestamp() + fraction


def _pairs(node: Any) -> list[tuple[str, str]]:
    out = []
    for h in node if isinstance(node, list) else []:
        if isinstance(h, dict) and isinstance(h.get("name"), str):
            value = h.get("value")
            out.append((h["name"], "" if value is None else str(value)))
    return out


def _text(content: Any) -> str:
    """A response's body as text: base64 decoded when its `encoding` says so; "" when not recorded."""
    if not isinstance(content, dict):
        return ""
    text = content.get("text")
    if not isinstance(text, str):
        return ""
    if str(content.get("encoding") or "").lower() == "base64":
        try:
            return base64.b64decode(text, validate=False).decode("utf-8", "replace")
        except ValueError:
            return ""
    return text


def _entry(i: int, raw: Any) -> Entry:
    if not isinstance(raw, dict):
        raise ValueError("it is not an object")
    request = raw["request"]
    response: dict[str, Any] = raw["response"] if isinstance(raw.get("response"), dict) else {}
    method = str(request.get("method") or "").upper()
    url = str(request.get("url") or "")
    split = urlsplit(url)
    if split.scheme not in ("http", "https") or not split.hostname:
        raise ValueError(f"its URL is not http(s) ({url[:40]!r})")
    if method not in METHODS:
        raise ValueError(f"its method {method[:20]} is not one squall sends")
    origin = f"{split.scheme}://{split.netloc.rpartition('@')[2]}"
    headers = [(k, v) for k, v in _pairs(request.get("headers"))]
    content: dict[str, Any] = response["content"] if isinstance(response.get("content"), dict) else {}
    cookies = _pairs(response.get("cookies"))
    response_headers = _pairs(response.get("headers"))
    if not cookies:  # some recorders leave `cookies` empty: the Set-Cookie headers say the same
        for k, v in response_headers:
            if k.lower() == "set-cookie":
                for line in v.split("\n"):
                    cookie, sep, _ = line.partition(";")[0].partition("=")
                    if sep:
                        cookies.append((cookie.strip(), _.strip()))
    status = response.get("status")
    timings = raw.get("time")
    redirect = str(response.get("redirectURL") or "") or next(
        (v for k, v in response_headers if k.lower() == "location"), ""
    )
    return Entry(
        index=i,
        started=_time(raw.get("startedDateTime")),
        duration=min(max(0.0, float(timings)), 3_600_000.0) / 1000 if isinstance(timings, (int, float)) else 0.0,
        method=method,
        url=url,
        origin=origin,
        host=split.netloc.rpartition("@")[2].lower(),
        path=split.path or "/",
        query=parse_qsl(split.query, keep_blank_values=True),
        headers=headers,
        body=_body(request.get("postData"), headers),
        status=status if isinstance(status, int) and not isinstance(status, bool) else 0,
        mime=str(content.get("mimeType") or "").lower(),
        resource=str(raw.get("_resourceType") or "").lower(),
        page=str(raw.get("pageref") or ""),
        response_headers=response_headers,
        response_cookies=cookies,
        cookies=_sent_cookies(headers, request.get("cookies")),
        response_text=_text(content),
        redirect=urljoin(url, redirect) if redirect and isinstance(status, int) and 300 <= status < 400 else "",
    )


def _sent_cookies(headers: list[tuple[str, str]], listed: Any) -> list[tuple[str, str]]:
    """The cookies a request sent: its Cookie headers' (HTTP/2 may split them), else the HAR's list."""
    out = []
    for k, v in headers:
        if k.lower() == "cookie":
            for piece in v.split(";"):
                name, sep, value = piece.strip().partition("=")
                if sep and name:
                    out.append((name, value))
    return out or _pairs(listed)


def _body(node: Any, headers: list[tuple[str, str]]) -> Body | None:
    if not isinstance(node, dict):
        return None
    mime = str(node.get("mimeType") or "")
    declared = next((v for k, v in headers if k.lower() == "content-type"), "") or mime
    text: str = node["text"] if isinstance(node.get("text"), str) else ""
    params = [p for p in sources.list_at(node, "params") if isinstance(p, dict) and isinstance(p.get("name"), str)]
    kind = declared.split(";")[0].strip().lower()
    if kind == "application/json" or kind.endswith("+json"):
        try:
            return Body("json", json.loads(text), content_type=kind if kind != "application/json" else "")
        except ValueError:
            return Body("raw", text, content_type=declared)
    if kind == "application/x-www-form-urlencoded":
        pairs = (
            parse_qsl(text, keep_blank_values=True)
            if text
            else [(p["name"], str(p.get("value") or "")) for p in params]
        )
        names = [k for k, _ in pairs]
        return Body("form", dict(pairs) if len(set(names)) == len(names) else pairs)
    if kind == "multipart/form-data" and params:
        fields: dict[str, Any] = {}
        files: list[tuple[str, tuple[str, bytes, str]]] = []
        for p in params:
            if p.get("fileName"):
                files.append(
                    (p["name"], (str(p["fileName"]), b"", str(p.get("contentType") or "application/octet-stream")))
                )
            else:
                fields[p["name"]] = str(p.get("value") or "")
        if not files:
            files = [(k, (None, v, None)) for k, v in fields.items()]  # type: ignore[misc]
            fields = {}
        return Body("multipart", fields, files=files)
    if not text:
        return None
    return Body("raw", text, content_type="" if any(k.lower() == "content-type" for k, _ in headers) else declared)


def _extension(path: str) -> str:
    last = path.rsplit("/", 1)[-1]
    return last.rsplit(".", 1)[-1].lower() if "." in last else ""


def _is_document(e: Entry) -> bool:
    return e.resource == "document" or (e.method == "GET" and e.mime.startswith("text/html") and 200 <= e.status < 400)


def _is_static(e: Entry) -> bool:
    """A file the browser fetched to show the page (a GET): an image, a style sheet, a script, a font, media."""
    if _is_document(e) or e.method not in ("GET", "HEAD"):
        return False
    if e.resource in STATIC_RESOURCES:
        return True
    if e.mime.startswith(STATIC_TYPES) or any(s in e.mime for s in STATIC_SCRIPT):
        return True
    return _extension(e.path) in STATIC_EXTENSIONS


# -- correlation -------------------------------------------------------------------------------------


def _scalars(value: Any, path: list[str]) -> list[tuple[list[str], Any]]:
    """Every string and number in a JSON value, with its path (list indices as "0", "1"...)."""
    out: list[tuple[list[str], Any]] = []
    stack: list[tuple[Any, list[str]]] = [(value, path)]
    while stack and len(out) < 5000:
        node, at = stack.pop()
        if isinstance(node, dict):
            stack += [(v, [*at, str(k)]) for k, v in reversed(list(node.items()))]
        elif isinstance(node, list):
            stack += [(v, [*at, str(i)]) for i, v in reversed(list(enumerate(node)))]
        elif isinstance(node, (str, int, float)) and not isinstance(node, bool):
            out.append((at, node))
    return out


def _same_url(a: str, b: str) -> bool:
    return a.split("#")[0] == b.split("#")[0]


def _offered(step: Entry) -> list[Source]:
    """The values a response returned that a later request could send back, the likeliest first (of
    the redirect's target, which the step's request ends at, when it was followed)."""
    out: list[Source] = []
    if step.followed is not None:  # the cookies the redirect itself set are in the session's jar too
        out += [Source(step.index, "cookie", [k], v) for k, v in step.response_cookies]
    e = step.followed or step
    if "json" in e.mime or e.response_text.lstrip()[:1] in ("{", "["):
        try:
            value = json.loads(e.response_text)
        except ValueError:
            value = None
        if value is not None:
            out += [Source(step.index, "json", path, v) for path, v in _scalars(value, [])]
    for k, v in e.response_headers:
        if k.lower() not in PLUMBING and not k.startswith(":"):
            out.append(Source(step.index, "header", [k], v))
    for k, v in e.response_cookies:
        out.append(Source(step.index, "cookie", [k], v))
    if "html" in e.mime:
        for tag in INPUT.findall(e.response_text):
            attributes = {a.lower(): b or c or d for a, b, c, d in ATTRIBUTE.findall(tag)}
            if attributes.get("type", "").lower() == "hidden" and attributes.get("name") and "value" in attributes:
                import html  # (a leaf of the standard library, for HTML's entities)

                out.append(Source(step.index, "hidden", [attributes["name"]], html.unescape(attributes["value"])))
    return [s for s in out if _distinctive(s.value)]


def _distinctive(value: Any) -> bool:
    """Long enough not to be the same as a request's value by coincidence (MIN_VALUE characters)."""
    text = str(value)
    return len(text) >= MIN_VALUE and text.lower() not in ("true", "false", "null", "undefined")


def _sent(e: Entry) -> str:
    """Everything a request sends that a value could be in, as one text (to search before matching)."""
    parts = [unquote(e.path), *(v for _, v in e.query), *(v for k, v in e.headers if k.lower() not in DROPPED)]
    if e.body is not None:
        parts.append(json.dumps(e.body.value) if e.body.kind == "json" else str(e.body.value))
    return "\n".join(parts)


def _correlate(kept: list[Entry]) -> dict[int, list[Source]]:
    """{entry index: the values to capture from its response}; each later use points at one of them
    (`_request` then puts `self.<attribute>` where the value was). Values are found through an index of
    their first MIN_VALUE characters, looked up where a value may start in a request (after a character
    that is not a letter or digit), so that a recording with large JSON responses is read in time
    linear in its size rather than in responses times requests."""
    known: dict[str, Source] = {}  # value as text -> where it came from
    index: dict[str, list[str]] = {}  # its first MIN_VALUE characters -> the values not used yet
    sent_prefixes: set[str] = set()  # what requests sent, from each place a value may start
    sent_before: list[str] = []
    captures: dict[int, list[Source]] = {}
    taken: set[str] = set(RESERVED)  # attribute names, never a name TaskSet has
    for e in kept:
        text = _sent(e)
        starts = _starts(text)
        for value in _found(text, starts, index):
            source = known[value]
            if not source.attribute:
                source.attribute = _attribute(source, taken)
                captures.setdefault(source.entry, []).append(source)
        # what a request sent before a response returned it is not that response's to give
        sent_before.append(text)
        sent_prefixes.update(text[i : i + MIN_VALUE] for i in starts)
        for source in _offered(e):
            key = str(source.value)
            if key[:MIN_VALUE] in sent_prefixes and any(_contains(t, key) for t in sent_before):
                continue
            if key not in known:
                index.setdefault(key[:MIN_VALUE], []).append(key)
            if key not in known or not known[key].attribute:
                known[key] = source
    return captures


_WORD = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")


def _starts(text: str) -> list[int]:
    """The places a value standing alone may start: the beginning, and after any character that is not
    a letter or a digit."""
    return [i for i in range(len(text)) if i == 0 or text[i - 1] not in _WORD]


def _found(text: str, starts: list[int], index: dict[str, list[str]]) -> list[str]:
    """The indexed values that stand alone somewhere in `text`."""
    out: dict[str, None] = {}
    for i in starts:
        for value in index.get(text[i : i + MIN_VALUE], ()):
            end = i + len(value)
            if value not in out and text.startswith(value, i) and (end == len(text) or text[end] not in _WORD):
                out[value] = None
    return list(out)


def _bounded(value: str) -> re.Pattern[str]:
    """`value` where it stands alone: not a piece of a longer word or number (an id inside a token)."""
    return re.compile(r"(?<![A-Za-z0-9])" + re.escape(value) + r"(?![A-Za-z0-9])")


def _contains(text: str, value: str) -> bool:
    return value in text and _bounded(value).search(text) is not None


def _around(text: str, value: str) -> tuple[str, str]:
    """What comes before and after the first place `value` stands alone in `text`."""
    found = _bounded(value).search(text)
    if found is None:
        return "", ""
    return text[: found.start()], text[found.end() :]


def _attribute(source: Source, taken: set[str]) -> str:
    keys = [k for k in source.key if not k.isdigit()]
    last = keys[-1] if keys else source.kind
    if source.kind == "json" and last.lower() == "id" and len(keys) >= 1:
        parent = [k for k in source.key[:-1] if not k.isdigit()]
        last = f"{parent[-1].rstrip('s')}_id" if parent else "id"
    return identifier(last, taken)


# -- the steps ----------------------------------------------------------------------------------------


def _steps(
    kept: list[Entry], captures: dict[int, list[Source]], main: Entry, pages: dict[str, str]
) -> tuple[list[Step], list[str]]:
    available: list[Source] = []
    steps: list[Step] = []
    names: set[str] = set()
    end = None
    page = None
    jar: set[str] = set()  # the cookies a kept response set: the session's jar sends them at run time
    for e in kept:
        request, uses = _request(e, available, main)
        comments = []
        recorded = [(k, v) for k, v in e.cookies if k not in jar]
        if recorded:
            # set before the recording began, by a script, or by a request left out: no response of the
            # journey sets them at run time, so they go as recorded
            request.cookies = recorded
        jar.update(k for k, _ in e.response_cookies)
        if e.followed is not None:
            jar.update(k for k, _ in e.followed.response_cookies)
        if e.page != page:
            page = e.page
            if page:
                comments.append(f"Page {pages.get(page, page)!r} starts here.")
        comments.append(f"{e.method} {e.path} (recorded: {e.status}).")
        for source in uses:
            comments.append(f"Sends {source.attribute}, from the response of {_described(source, kept)}.")
        if recorded:
            names_ = ", ".join(k for k, _ in recorded)
            comments.append(
                f"Sends the cookies {names_} as recorded: no response of the journey sets them (a script did,"
                " or a request left out, or they were there before the recording)."
            )
        stale = _recorded_credentials(request.headers)
        if stale:
            comments.append(
                f"Sends {', '.join(stale)} as recorded: no response of the journey gave it (a login before the"
                " recording, or left out); once it expires, replace it (or record the login too)."
            )
        if request.body is not None and request.body.kind == "multipart" and any(f[1][0] for f in request.body.files):
            comments.append("Its files are sent empty: a HAR does not hold the bytes uploaded.")
        think = 0.0
        if end is not None and e.started - end >= MIN_THINK:
            think = round(min(e.started - end, MAX_THINK), 1)
            longer = " (longer, cut to this: a pause, not a think time)" if e.started - end > MAX_THINK else ""
            comments.append(f"The recording waited {think:g} s before this request{longer}.")
        end = max(end or 0.0, e.started + e.duration)
        own = captures.get(e.index, [])
        step_captures = [Capture(s.attribute, s.kind, s.key, _capture_comment(s)) for s in own]
        function = identifier(_function(e.method, request.name), names | RESERVED)
        names.add(function)
        steps.append(Step(function, request, comments, think=think, captures=step_captures))
        available += own
    comments = [
        f"The journey as recorded: {len(steps)} request{'s' if len(steps) != 1 else ''} in order, each after the"
        " think time the recording had. Values a response returned and a later request sent are taken from"
        f" the response at run time when they are at least {MIN_VALUE} characters long, stand alone (not in"
        " a longer word or number) and were not sent before that response (shorter ones match by"
        " coincidence); one not found fails its request, saying which, and ends the journey."
    ]
    return steps, comments


def _described(source: Source, kept: list[Entry]) -> str:
    e = next(k for k in kept if k.index == source.entry)
    where = {
        "json": "its JSON field",
        "header": "its header",
        "cookie": "its cookie",
        "hidden": "its hidden form field",
    }
    return f"{e.method} {e.path} ({where[source.kind]} {'/'.join(source.key)})"


def _capture_comment(source: Source) -> str:
    return ""


def _function(method: str, name: str) -> str:
    """get_items_item_id: the method and the last three parts of the route template."""
    words = [s.strip("{}") for s in name.split("/") if s]
    return f"{method.lower()}_{'_'.join(words[-3:]) or 'root'}"


def _dynamic(segment: str) -> bool:
    text = unquote(segment)
    return text.isdigit() or bool(UUID.match(text)) or bool(HEX.match(text))


def _request(e: Entry, available: list[Source], main: Entry) -> tuple[Request, list[Source]]:
    """The request, with each available value where the recording had it, and the sources it used."""
    uses: list[Source] = []

    def replaced(text: str, raw: Any = None) -> Any:
        """`text` with the captured values in it: itself, `self.<attr>` or an f-string."""
        found = [s for s in reversed(available) if _contains(text, str(s.value))]
        if not found:
            return raw if raw is not None else text
        best = max(found, key=lambda s: len(str(s.value)))
        if best not in uses:
            uses.append(best)
        if text == str(best.value):
            if raw is not None and not isinstance(raw, str) and isinstance(best.value, (int, float)):
                return Code(f"self.{best.attribute}")
            return Code(f"self.{best.attribute}" if isinstance(best.value, str) else f"str(self.{best.attribute})")
        head, tail = _around(text, str(best.value))
        return Code("f" + string(_braces(head) + "{self." + best.attribute + "}" + _braces(tail)))

    path_parts: list[str] = []
    name_parts: list[str] = []
    for segment in e.path.split("/"):
        text = unquote(segment)
        found = [s for s in reversed(available) if _contains(text, str(s.value))]
        if found:
            best = max(found, key=lambda s: len(str(s.value)))
            if best not in uses:
                uses.append(best)
            head, tail = _around(text, str(best.value))
            path_parts.append(
                _braces(quote(head, safe="")) + "{self." + best.attribute + "}" + _braces(quote(tail, safe=""))
            )
            name_parts.append(head + "{" + best.attribute + "}" + tail)
        else:
            path_parts.append(_braces(segment))
            name_parts.append("{id}" if _dynamic(segment) else segment)
    path: Any = e.path
    if len(uses) > 0:
        path = Code("f" + string("/".join(path_parts)))
    if e.origin != main.origin:  # kept with --keep-hosts: the whole URL
        path = Code(f"{string(e.origin)} + {path}") if isinstance(path, Code) else e.origin + path
    query = [(k, replaced(v)) for k, v in e.query]
    headers = [(k, replaced(v)) for k, v in e.headers if not _dropped(k)]
    body = e.body
    if body is not None and body.kind == "multipart":  # the client writes the boundary
        headers = [(k, v) for k, v in headers if k.lower() != "content-type"]
    if body is not None:
        if body.kind == "json":
            body = Body("json", _walk(body.value, replaced), content_type=body.content_type)
        elif body.kind == "form":
            value = body.value
            pairs = value.items() if isinstance(value, dict) else value
            new = [(k, replaced(v)) for k, v in pairs]
            body = Body("form", dict(new) if isinstance(value, dict) else new)
        elif body.kind == "raw":
            body = Body("raw", replaced(body.value), content_type=body.content_type)
    name = "/".join(name_parts)
    request = Request(method=e.method.lower(), path=path, name=name, query=query, headers=headers, body=body)
    return request, uses


def _walk(value: Any, replaced: Any) -> Any:
    if isinstance(value, dict):
        return {k: _walk(v, replaced) for k, v in value.items()}
    if isinstance(value, list):
        return [_walk(v, replaced) for v in value]
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return replaced(str(value), value)
    return value


def _dropped(name: str) -> bool:
    low = name.lower()
    return low.startswith(":") or low.startswith("sec-") or low in DROPPED


def _braces(text: str) -> str:
    return text.replace("{", "{{").replace("}", "}}")


def _about(result: Plan, name: str, made_by: str, title: str, captures: int, options: Options) -> list[str]:
    paragraphs = [
        f"{title}: a Locust load test made by squall import har.",
        f"From {name} (recorded by {made_by}): {result.tally()}"
        + (" (listed at the end of this file)." if result.left_out else ".")
        + " The journey is replayed in order with its recorded think times; static files and other hosts"
        " are left out unless asked for (--keep-static, --keep-hosts).",
        f"{captures} value{'s' if captures != 1 else ''} a response returned and a later request sent"
        " (tokens, CSRF values, ids) are taken from the response at run time instead of replayed. Cookies"
        " go by the session's cookie jar; headers the browser manages (Cookie, sec-*, User-Agent, ...) are"
        " not sent.",
        f"Runs unchanged with squall (squall -f {options.output}) and Locust (locust -f {options.output}).",
    ]
    return pysource.docstring(paragraphs)

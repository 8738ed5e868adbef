"""What locustfiles hand to `self.client` in requests' own terms, turned into what the engine sends:
case-insensitive header maps, `auth=` in its three forms, `files=` (multipart, encoded by urllib3 as
requests does), and the exceptions requests raises.

When requests is installed (it is wherever Locust is), squall's exceptions also derive from requests'
own, so that a locustfile's `except requests.exceptions.HTTPError:` catches what squall raises; without
it they stand alone. Nothing here does I/O."""

from __future__ import annotations

import base64
import functools
import os
from collections.abc import Iterable, Iterator, Mapping, MutableMapping
from typing import Any

from squall.exception import LocustError, ResponseError

# requests is not squall's dependency, and importing it costs about 120 ms of every start (measured:
# `import squall.clients` 0.07 s without, 0.19 s with), so its exception classes are borrowed on the
# first failure, not at import.
_BORROWED = {
    "HTTPError": (ResponseError,),
    "ConnectionError": (ResponseError,),
    "InvalidURL": (ValueError,),
    "InvalidHeader": (ValueError,),
    # What iterating a streamed body cut short raises (requests' own, of a body that ended otherwise
    # than its framing says): not a ResponseError, so that a catch_response block lets it through, as
    # Locust's does.
    "ChunkedEncodingError": (OSError,),
}


@functools.cache
def error_class(name: str) -> type[Exception]:
    """squall's exception `name` (HTTPError, ConnectionError, InvalidURL, InvalidHeader,
    ChunkedEncodingError): a subclass of requests' class of that name when requests is installed, so that
    `except requests.exceptions.X` catches it, and of squall's own base (ResponseError, ValueError,
    OSError) always."""
    ours = _BORROWED[name]
    try:
        import requests.exceptions

        theirs: tuple[type, ...] = (getattr(requests.exceptions, name),)
    except ImportError:
        theirs = ()
    # requests' class first where it derives from ours already (its InvalidURL from ValueError, its
    # exceptions from OSError), which must come after it.
    bases = (*theirs, *ours) if ours[0] in (ValueError, OSError) else (*ours, *theirs)
    return type(name, bases, {"__module__": __name__})


def __getattr__(name: str) -> Any:  # `from squall.requests_compat import HTTPError`, made on first use
    if name in _BORROWED:
        return error_class(name)
    raise AttributeError(name)


class NotSupported(LocustError):
    """A requests feature a locustfile uses that squall's engine does not have (yet): said at once,
    never silently dropped."""


class CaseInsensitiveDict(MutableMapping[str, Any]):
    """requests' header map: names compare without case, the last spelling set is the one sent."""

    __slots__ = ("_sent", "_store")

    def __init__(self, data: Mapping[str, Any] | Iterable[tuple[str, Any]] | None = None, **kw: Any) -> None:
        self._sent: list[tuple[str, str]] | None = None  # the headers as sent, kept until one changes
        if isinstance(data, tuple) and not kw:  # a session's defaults: pairs (MutableMapping.update is slower)
            self._store: dict[str, tuple[str, Any]] = {k.lower(): (k, v) for k, v in data}
        else:
            self._store = {}
            self.update(data or {}, **kw)

    def __setitem__(self, key: str, value: Any) -> None:
        self._sent = None
        self._store[key.lower()] = (key, value)

    def __getitem__(self, key: str) -> Any:
        return self._store[key.lower()][1]

    def __delitem__(self, key: str) -> None:
        self._sent = None
        del self._store[key.lower()]

    def __iter__(self) -> Iterator[str]:
        return (k for k, _ in self._store.values())

    def __len__(self) -> int:
        return len(self._store)

    def copy(self) -> CaseInsensitiveDict:
        return CaseInsensitiveDict(self._store.values())

    def __repr__(self) -> str:
        return repr(dict(self.items()))


def merge_headers(session: Mapping[str, Any], call: Mapping[str, Any] | None) -> list[tuple[str, str]]:
    """The headers of one request: the session's, then the call's (a call's header replaces the
    session's of the same name, whatever its case; None removes it), as requests merges them.

    A fresh list each time (the caller may add to it). The session's own headers are converted once
    until one of them changes: most requests add none, and converting them each time cost about
    1.5 µs of a scripted request's 30 (cProfile, 4 default headers)."""
    if not isinstance(session, CaseInsensitiveDict):  # a script that set `client.headers = {...}`
        session = CaseInsensitiveDict(session)
    if not call:
        sent = session._sent
        if sent is None:
            sent = session._sent = [(k, _text(v)) for k, v in session._store.values()]
        return sent.copy()
    merged = dict(session._store)
    for k, v in call.items():
        if v is None:
            merged.pop(k.lower(), None)
        else:
            merged[k.lower()] = (k, v)
    return [(k, _text(v)) for k, v in merged.values()]


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("latin-1")
    if not isinstance(value, str):
        # requests refuses non-string header values (InvalidHeader), so a script that works there never
        # gets here with one; an int is the common slip, said clearly.
        raise error_class("InvalidHeader")(f"header value must be str or bytes, not {type(value).__name__}: {value!r}")
    return value


def basic_auth(user: str | bytes, password: str | bytes) -> str:
    """The `Authorization` value of HTTP basic authentication (requests' `_basic_auth_str`)."""
    u = user.encode("latin-1") if isinstance(user, str) else user
    p = password.encode("latin-1") if isinstance(password, str) else password
    return "Basic " + base64.b64encode(u + b":" + p).decode("ascii")


class PreparedRequest:
    """What a custom `requests.auth.AuthBase` is called with: it edits the headers (or the URL)."""

    def __init__(self, method: str, url: str, headers: list[tuple[str, str]], body: bytes) -> None:
        self.method = method
        self.url = url
        self.headers = CaseInsensitiveDict(headers)
        self.body = body

    def prepare_headers(self, headers: Mapping[str, str]) -> None:
        self.headers = CaseInsensitiveDict(headers)


def apply_auth(
    auth: Any, method: str, url: str, headers: list[tuple[str, str]], body: bytes
) -> tuple[str, list[tuple[str, str]]]:
    """(URL, headers) of a request with requests' `auth=`: a (user, password) pair or HTTPBasicAuth is
    basic authentication; any other callable is a custom AuthBase, called as requests calls it. Digest
    authentication needs the server's challenge first, which the engine does not answer: NotSupported."""
    if isinstance(auth, (tuple, list)) and len(auth) == 2:
        return url, [*(h for h in headers if h[0].lower() != "authorization"), ("Authorization", basic_auth(*auth))]
    kind = type(auth).__name__
    if kind == "HTTPDigestAuth":
        raise NotSupported("auth=HTTPDigestAuth is not supported by squall: use basic auth or a header")
    if kind in ("HTTPBasicAuth", "HTTPProxyAuth") and hasattr(auth, "username"):
        return apply_auth((auth.username, auth.password), method, url, headers, body)
    if callable(auth):
        prepared = auth(PreparedRequest(method, url, headers, body))
        if prepared is None or not hasattr(prepared, "headers"):
            raise TypeError(f"auth {kind} returned {prepared!r}, not the request")
        return str(prepared.url), [(k, _text(v)) for k, v in prepared.headers.items()]
    raise TypeError(f"auth must be a (user, password) pair or a requests.auth.AuthBase, not {kind}")


def encode_files(files: Any, data: Any) -> tuple[bytes, str]:
    """The multipart/form-data body and its Content-Type for requests' `files=` (and `data=` fields
    beside them), encoded with urllib3's encoder exactly as requests' `_encode_files` does: a value is
    a file object, bytes or text, or a (filename, content[, content type[, headers]]) tuple."""
    from urllib3.fields import RequestField
    from urllib3.filepost import encode_multipart_formdata

    if isinstance(data, (str, bytes)):
        raise ValueError("Data must not be a string.")
    fields: list[RequestField | tuple[str, bytes]] = []
    for name, value in _pairs(data or {}):
        values = value if isinstance(value, (list, tuple)) else [value]
        for v in values:
            if v is not None:
                fields.append((name, v if isinstance(v, bytes) else str(v).encode()))
    for name, value in _pairs(files):
        content_type = headers = None
        if isinstance(value, (tuple, list)):
            filename, content, *rest = value
            content_type = rest[0] if rest else None
            headers = rest[1] if len(rest) > 1 else None
        else:
            filename, content = _guess_filename(value) or name, value
        if content is None:
            continue
        payload = content.read() if hasattr(content, "read") else content
        field = RequestField(name=name, data=payload, filename=filename, headers=headers)
        field.make_multipart(content_type=content_type)
        fields.append(field)
    return encode_multipart_formdata(fields)


def _pairs(value: Any) -> list[tuple[str, Any]]:
    return list(value.items()) if isinstance(value, Mapping) else list(value)


def _guess_filename(obj: Any) -> str | None:
    name = getattr(obj, "name", None)
    if isinstance(name, str) and not (name.startswith("<") and name.endswith(">")):
        return os.path.basename(name)
    return None


def json_error(e: ValueError, doc: str) -> ValueError:
    """The exception `response.json()` raises on a body that is not JSON: requests' JSONDecodeError
    (a json.JSONDecodeError too) when requests is installed, else json's own."""
    try:
        from requests.exceptions import JSONDecodeError
    except ImportError:
        return e
    if hasattr(e, "msg"):
        return JSONDecodeError(e.msg, doc, getattr(e, "pos", 0))
    return e

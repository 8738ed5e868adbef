"""`self.client` of HttpUser and FastHttpUser: a requests-like session whose I/O runs in the engine.

Each call is one request event, redirects included (followed in the engine, timed as one request).
Cookies set by responses are kept in the engine, per user, and sent back to the host that set them.
4xx and 5xx count as failures unless `catch_response=True` decides otherwise."""

from __future__ import annotations

import base64
import json as jsonlib
import re
import time
from collections.abc import Iterator, Mapping, MutableMapping, Sequence
from contextlib import contextmanager
from datetime import timedelta
from http import HTTPStatus
from typing import TYPE_CHECKING, Any, Callable, overload
from urllib.parse import unquote, urlencode, urlsplit, urlunsplit

from squall.exception import CatchResponseError, ResponseError

if TYPE_CHECKING:
    from types import TracebackType

    from squall.env import Environment
    from squall.event import EventHook
    from squall.hub import Hub

    # Query parameters as requests takes them: a mapping, (name, value) pairs, or an encoded string.
    Params = Mapping[str, Any] | Sequence[tuple[str, Any]] | str
    # (method, stats name, URL, context) of a request, for its request event.
    RequestMeta = tuple[str, str, str, Mapping[str, Any]]

DEFAULT_TIMEOUT = 60.0
METHODS_WITH_BODY = ("POST", "PUT", "PATCH")


class HTTPError(ResponseError):
    pass


class ConnectionError(ResponseError):  # shadows the builtin on purpose: the name requests' users catch
    pass


class Headers(dict[str, str]):
    """Response headers, looked up without regard to case; repeated headers are joined with ", "
    as requests does."""

    def __init__(self, raw: bytes = b"") -> None:
        super().__init__()
        for line in raw.decode("latin-1").split("\r\n"):
            k, sep, v = line.partition(":")
            if not sep:
                continue
            k, v = k.strip().lower(), v.strip()
            if dict.__contains__(self, k):
                v = f"{dict.__getitem__(self, k)}, {v}"
            dict.__setitem__(self, k, v)

    def __getitem__(self, key: str) -> str:
        return dict.__getitem__(self, key.lower())

    def __contains__(self, key: str) -> bool:  # type: ignore[override]  # names are text
        return dict.__contains__(self, key.lower())

    @overload  # type: ignore[override]  # names are text
    def get(self, key: str, default: None = None) -> str | None: ...
    @overload
    def get(self, key: str, default: str) -> str: ...
    def get(self, key: str, default: str | None = None) -> str | None:
        return dict.get(self, key.lower(), default)


class Response:
    """What a request came to: requests' Response attributes that locustfiles use."""

    __slots__ = (
        "_headers",
        "_raw_headers",
        "content",
        "elapsed_us",
        "encoding",
        "error",
        "request_method",
        "status_code",
        "url",
    )

    def __init__(
        self,
        method: str,
        url: str,
        status: int,
        raw_headers: bytes,
        content: bytes,
        elapsed_us: int,
        error: str | None,
    ) -> None:
        self.request_method = method
        self.url = url
        self.status_code = status  # 0 when no response came (error says why)
        self._raw_headers = raw_headers
        self._headers: Headers | None = None
        self.content = content
        self.elapsed_us = elapsed_us
        self.error = error
        self.encoding: str | None = None

    @property
    def elapsed(self) -> timedelta:
        return timedelta(microseconds=self.elapsed_us)

    @property
    def headers(self) -> Headers:
        if self._headers is None:  # built on first use: most scripts never read headers
            self._headers = Headers(self._raw_headers)
        return self._headers

    @property
    def reason(self) -> str:
        try:
            return HTTPStatus(self.status_code).phrase
        except ValueError:
            return ""

    @property
    def ok(self) -> bool:
        return self.error is None and 0 < self.status_code < 400

    @property
    def text(self) -> str:
        encoding = self.encoding
        if encoding is None:
            ctype = self.headers.get("content-type", "")
            encoding = ctype.split("charset=", 1)[1].split(";")[0].strip() if "charset=" in ctype else "utf-8"
        return self.content.decode(encoding, errors="replace")

    def json(self, **kwargs: Any) -> Any:
        return jsonlib.loads(self.content, **kwargs)

    def raise_for_status(self) -> None:
        exc = self.exception()
        if exc is not None:
            raise exc

    def exception(self) -> ResponseError | None:
        """The exception a failed request stands for, as Locust reports it; None on success."""
        if self.error is not None:
            return ConnectionError(self.error)
        if self.status_code >= 400:
            kind = "Client" if self.status_code < 500 else "Server"
            return HTTPError(f"{self.status_code} {kind} Error: {self.reason} for url: {self.url}")
        return None

    def __repr__(self) -> str:
        return f"<Response [{self.status_code}]>"


class ResponseContextManager:
    """`with self.client.get(..., catch_response=True) as response:` — the block decides success."""

    def __init__(self, response: Response, report: Callable[[Response, str], None]) -> None:
        self._response = response
        self._report = report
        self._verdict: str | None = None  # None: judged at exit; "": success; text: failure message
        # What "judged at exit" means beyond the status (GraphQL errors).
        self._default_failure: str | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._response, name)

    def __enter__(self) -> ResponseContextManager:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool:
        if exc is not None:
            if isinstance(exc, ResponseError):
                self._verdict = str(exc)
                self._report(self._response, self._verdict)
                return True
            self._report(self._response, f"{type(exc).__name__}({exc})")
            return False
        if self._verdict is None:
            failed = self._response.exception()
            self._verdict = str(failed) if failed is not None else (self._default_failure or "")
        self._report(self._response, self._verdict)
        return False

    def success(self) -> None:
        self._verdict = ""

    def failure(self, exc: object) -> None:
        """Marks the request failed; `exc` is a message or an exception."""
        self._verdict = str(exc) if str(exc) else repr(exc)


class CookieJar(MutableMapping[str, str]):
    """`self.client.cookies`: the user's cookie jar, kept in the engine (which sends each cookie back to
    the host that set it). Reads and writes like a dict of name -> value, as requests' jar does for the
    common cases; a cookie set here goes to every host."""

    def __init__(self, engine: Any, user_id: int) -> None:
        self._engine = engine
        self._user = user_id

    def _all(self) -> list[tuple[str, str, str]]:
        return self._engine.cookies(self._user)  # type: ignore[no-any-return]

    def __getitem__(self, name: str) -> str:
        for n, v, _ in self._all():
            if n == name:
                return v
        raise KeyError(name)

    def __setitem__(self, name: str, value: str) -> None:
        self._engine.set_cookie(self._user, name, str(value))

    def __delitem__(self, name: str) -> None:
        if name not in self:
            raise KeyError(name)
        self._engine.remove_cookies(self._user, name)

    def __iter__(self) -> Iterator[str]:
        return iter(dict.fromkeys(n for n, _, _ in self._all()))

    def __len__(self) -> int:
        return len(dict.fromkeys(n for n, _, _ in self._all()))

    def clear(self) -> None:
        self._engine.remove_cookies(self._user)

    def get_dict(self) -> dict[str, str]:
        return {n: v for n, v, _ in self._all()}

    def set(self, name: str, value: str, domain: str = "", **_kw: Any) -> None:
        self._engine.set_cookie(self._user, name, str(value), domain)

    def __repr__(self) -> str:
        return f"<CookieJar {self.get_dict()!r}>"


class HttpSession:
    """One user's session: base URL, default headers, and the engine's connections and cookie jar for
    this user. The engine joins the base and the URL, parses each once, and names the request by its
    path and query unless told otherwise."""

    def __init__(self, base_url: str | None, user_id: int, hub: Hub, environment: Environment) -> None:
        self.base_url, credentials = split_userinfo(base_url or "")
        self.user_id = user_id
        self.hub = hub
        self.environment = environment
        # A host given as http://user:secret@host/ authenticates every request, as requests does.
        self.headers: dict[str, str] = {"Authorization": credentials} if credentials else {}
        self.cookies = CookieJar(hub.engine, user_id)
        self._rename: str | None = None

    @contextmanager
    def rename_request(self, name: str) -> Iterator[None]:
        """Groups the requests made inside the block under one stats name."""
        previous, self._rename = self._rename, name
        try:
            yield
        finally:
            self._rename = previous

    def request(
        self,
        method: str,
        url: str,
        name: str | None = None,
        catch_response: bool = False,
        context: Mapping[str, Any] | None = None,
        *,
        params: Params | None = None,
        headers: Mapping[str, str] | None = None,
        json: Any = None,
        data: str | bytes | bytearray | dict[str, Any] | None = None,
        cookies: Mapping[str, str] | None = None,
        timeout: float | tuple[float | None, float | None] | None = None,
        allow_redirects: bool = True,
        **_ignored: Any,
    ) -> Response | ResponseContextManager:
        """One request, as requests' `Session.request` takes it (and Locust's `name`, `catch_response`,
        `context`). With `catch_response=True` the result is a context manager whose block judges it."""
        method = method.upper()
        if params:
            query = urlencode(params, doseq=True) if not isinstance(params, str) else params
            url += ("&" if "?" in url else "?") + query
        header_list = [*self.headers.items(), *headers.items()] if headers else list(self.headers.items())
        body = b""
        if json is not None:
            body = jsonlib.dumps(json).encode()
            header_list.append(("Content-Type", "application/json"))
        elif isinstance(data, dict):
            body = urlencode(data, doseq=True).encode()
            header_list.append(("Content-Type", "application/x-www-form-urlencoded"))
        elif data is not None:
            body = data.encode() if isinstance(data, str) else bytes(data)
        if isinstance(timeout, tuple):
            timeout = sum(t for t in timeout if t)
        hub = self.hub
        op = hub.engine.submit(
            self.user_id,
            method,
            self.base_url,
            url,
            self._rename or name,
            header_list,
            list(cookies.items()) if cookies else [],
            body,
            float(timeout or DEFAULT_TIMEOUT),
            not catch_response,
            allow_redirects,
        )
        c = hub.wait_for(op)
        response = Response(method, c.url, c.status, c.head, c.body, c.elapsed_us, c.error)
        meta: RequestMeta = (method, c.name, c.url, context or {})
        if catch_response:
            return ResponseContextManager(response, lambda r, verdict: self._report(r, verdict, meta))
        events = self.environment.events.request
        if events:
            self._fire(events, response, meta, response.exception())
        return response

    def _report(self, response: Response, verdict: str, meta: RequestMeta) -> None:
        method, name = meta[0], meta[1]
        self.hub.engine.record(
            method, name, response.elapsed_us, response.status_code, len(response.content), verdict or None
        )
        events = self.environment.events.request
        if events:
            self._fire(events, response, meta, CatchResponseError(verdict) if verdict else None)

    @staticmethod
    def _fire(hook: EventHook, response: Response, meta: RequestMeta, exception: BaseException | None) -> None:
        method, name, url, context = meta
        start_time = time.time() - response.elapsed_us / 1e6
        hook.fire(
            request_type=method,
            name=name,
            response_time=response.elapsed_us / 1000.0,
            response_length=len(response.content),
            response=response,
            context=context,
            exception=exception,
            start_time=start_time,
            url=url,
        )

    def graphql(
        self,
        query: str,
        variables: Mapping[str, Any] | None = None,
        operation_name: str | None = None,
        name: str | None = None,
        url: str = "/graphql",
        catch_response: bool = False,
        **kw: Any,
    ) -> Response | ResponseContextManager:
        """POSTs a GraphQL request (`{"query", "variables", "operationName"}`) to `url`. Its stats name
        is `GQL <operation>` unless `name` is given. A 200 whose body carries `errors` is a failure with
        the first error's message, unless `catch_response=True` lets the block decide."""
        operation = operation_name or _operation_name(query)
        payload: dict[str, Any] = {"query": query}
        if variables is not None:
            payload["variables"] = variables
        if operation_name:
            payload["operationName"] = operation_name
        stats_name = name or (f"GQL {operation}" if operation else "GQL")
        ctx = self.request("POST", url, name=stats_name, catch_response=True, json=payload, **kw)
        assert isinstance(ctx, ResponseContextManager)  # catch_response=True
        ctx._default_failure = _graphql_error(ctx._response)
        if catch_response:
            return ctx
        with ctx:
            pass
        return ctx._response

    def get(self, url: str, **kw: Any) -> Response | ResponseContextManager:
        return self.request("GET", url, **kw)

    def post(self, url: str, data: Any = None, json: Any = None, **kw: Any) -> Response | ResponseContextManager:
        return self.request("POST", url, data=data, json=json, **kw)

    def put(self, url: str, data: Any = None, **kw: Any) -> Response | ResponseContextManager:
        return self.request("PUT", url, data=data, **kw)

    def patch(self, url: str, data: Any = None, **kw: Any) -> Response | ResponseContextManager:
        return self.request("PATCH", url, data=data, **kw)

    def delete(self, url: str, **kw: Any) -> Response | ResponseContextManager:
        return self.request("DELETE", url, **kw)

    def head(self, url: str, **kw: Any) -> Response | ResponseContextManager:
        return self.request("HEAD", url, allow_redirects=kw.pop("allow_redirects", False), **kw)

    def options(self, url: str, **kw: Any) -> Response | ResponseContextManager:
        return self.request("OPTIONS", url, **kw)


_OPERATION = re.compile(r"^\s*(?:query|mutation|subscription)\s+([_A-Za-z][_0-9A-Za-z]*)")


def _operation_name(query: str | None) -> str | None:
    m = _OPERATION.match(query or "")
    return m.group(1) if m else None


def _graphql_error(response: Response) -> str | None:
    """The first GraphQL error's message in a successful HTTP response, else None."""
    if not response.ok:
        return None
    try:
        errors = response.json().get("errors")
    except (ValueError, AttributeError):
        return None
    if not errors:
        return None
    first = errors[0]
    return f"GraphQL error: {first.get('message', first) if isinstance(first, dict) else first}"


def split_userinfo(url: str) -> tuple[str, str | None]:
    """(the URL without `user:secret@`, its basic-authentication header value or None)."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url, None
    userinfo, host = parts.netloc.rsplit("@", 1)
    user, _, password = userinfo.partition(":")
    token = base64.b64encode(f"{unquote(user)}:{unquote(password)}".encode()).decode()
    return urlunsplit(parts._replace(netloc=host)), f"Basic {token}"

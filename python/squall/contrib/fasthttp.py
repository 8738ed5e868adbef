"""`locust.contrib.fasthttp`: Locust's FastHttpUser. In squall every HTTP client runs in the engine, so
it is HttpUser's session with FastHttpUser's settings and defaults:

- `insecure = True` (certificates are not checked unless the class sets it False), `max_redirects = 30`,
  `network_timeout` (each request's timeout) and `default_headers`, as Locust's;
- `connection_timeout` bounds the whole request too: the engine has one deadline per request, so the
  effective timeout is the smaller of the two;
- `concurrency` and `client_pool` tune geventhttpclient's connection pools: the engine opens a user's
  connections as its requests need them (one per request in flight), so they change nothing here;
- `max_retries`: an idempotent request that timed out or found its connection closed before any
  response is sent again, up to this many times, as geventhttpclient does; only the last try is a
  request in the stats, as in Locust (geventhttpclient also retries inside each try, once per pooled
  connection plus one; squall does not copy that);
- `proxy_host` and `ssl_context_factory` are not supported: the user fails to start with NotSupported;
- a request is named by the URL it was given, as Locust's FastHttpSession names it (HttpSession by the
  path it requested): on a host with a path, "a" is "a"; an absolute URL is its whole text; `params=`
  are not in the name;
- a failed status (400 and above) is the response's `error`, a `LocustBadStatusCode(code=500)` as
  Locust's, which `raise_for_status()` raises, the request event is told and a with-block that judges
  nothing records (requests' sessions say HTTPError('500 Server Error: ...'))."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, cast

from squall.clients import (
    _ACCEPT_JSON,
    HttpSession,
    RawStream,
    Response,
    ResponseContextManager,
    RestResponseContextManager,
    StreamedContextManager,
    StreamedResponse,
    set_settings,
)
from squall.requests_compat import NotSupported, error_class
from squall.user.users import SessionUser, User

if TYPE_CHECKING:
    from squall.env import Environment


# What geventhttpclient retries (its UserAgent._handle_error): a timeout, or a connection closed before
# any response (EmptyResponse); and only idempotent methods (RFC 9110 9.2.2). A response cut short is not
# retried. In the engine's words:
_RETRIED = frozenset({"request timed out", "connect timed out", "server closed the connection before responding"})
_IDEMPOTENT = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS", "TRACE"})


class ConnectionError(Exception):  # geventhttpclient's name, which files import from here
    """geventhttpclient's `useragent.ConnectionError`, the base of Locust's LocustBadStatusCode: a URL,
    a text and keywords (`code=500`), each keyword an attribute too."""

    def __init__(self, url: str | None, *args: Any, **kw: Any) -> None:
        self.url = url
        self.__dict__.update(kw)
        if args and isinstance(args[0], str):
            self.text = args[0] if len(args) == 1 else args[0] + ": " + str(args[1:])
        else:
            self.text = str(args[0]) if len(args) == 1 else ""
        self.kw_text = ", ".join(f"{key}={val}" for key, val in kw.items())
        if kw:
            self.text += (", " if self.text else "") + self.kw_text
        super().__init__(url, *args)

    def __str__(self) -> str:
        return f"URL {self.url}: {self.text}" if self.text else f"URL {self.url}"

    def __repr__(self) -> str:
        text = super().__repr__()
        return text.replace(")", f", {self.kw_text})") if self.kw_text else text


class LocustBadStatusCode(ConnectionError):
    """Locust's FastHttpSession's error for a failed status: `LocustBadStatusCode(code=404)` (its URL left
    out of the repr, as Locust's is), with the response as `response` and the status as `code`."""

    code: int
    response: Response

    def __repr__(self) -> str:
        text = super().__repr__()
        return text.replace(repr(self.url) + ", ", "") if self.kw_text else text


def _bad_status(response: Response) -> Exception:
    """geventhttpclient's error for a failed status, which Locust's FastHttpSession keeps as the
    response's `error`."""
    error = LocustBadStatusCode(response.url, code=response.status_code)
    error.response = response
    return error


class FastHttpSession(HttpSession):
    """FastHttpUser's client: HttpSession with FastHttpUser's defaults. Made by hand (a second host, the
    pytest-style `fastsession` fixture) it takes Locust's arguments, with geventhttpclient's defaults
    (3 redirects, 3 retries)."""

    default_insecure = True
    # The types geventhttpclient gives `data=` bodies (its Accept-Encoding is not sent: the engine does
    # not decompress bodies; and the engine's Accept: */* is, where geventhttpclient sends none).
    text_type = "text/plain; charset=utf-8"
    bytes_type = "application/octet-stream"
    form_type = "application/x-www-form-urlencoded; charset=utf-8"
    max_retries = 0
    locust_words = "fasthttp"
    names_by_url = True
    accepts_json = True
    own_request = True  # its `request` is squall's: `get` and `post` send through `_call` (HttpSession)
    status_error = staticmethod(_bad_status)
    url_has_params = False

    def __init__(
        self,
        base_url: str | None,
        request_event: Any = None,
        user: Any = None,
        insecure: bool = True,
        client_pool: Any = None,
        ssl_context_factory: Any = None,
        *,
        network_timeout: float = 60.0,
        connection_timeout: float = 60.0,
        max_redirects: int = 3,
        max_retries: int = 3,
        concurrency: int = 10,
        headers: Mapping[str, str] | None = None,
        proxy_host: str | None = None,
        proxy_port: int | None = None,
        **_user_agent: Any,
    ) -> None:
        if proxy_host:
            raise NotSupported("FastHttpUser.proxy_host is not supported by squall: it connects to the target directly")
        if ssl_context_factory is not None:
            raise NotSupported("FastHttpUser.ssl_context_factory is not supported by squall: set insecure instead")
        super().__init__(base_url, request_event, user)
        # `client_pool` and `concurrency` tune geventhttpclient's pools: nothing to tune in the engine.
        settings = {
            "default_insecure": insecure,
            "max_redirects": max_redirects,
            "max_retries": max_retries,
            "timeout": min(network_timeout, connection_timeout),
        }
        set_settings(self, settings)
        if headers:
            self.headers.update(headers)

    def request(  # type: ignore[override]  # FastHttpSession's own order: data before catch_response
        self,
        method: str,
        url: str,
        name: str | None = None,
        data: Any = None,
        catch_response: bool = False,
        stream: bool = False,
        headers: Mapping[str, Any] | None = None,
        auth: Any = None,
        json: Any = None,
        allow_redirects: bool = True,
        context: Mapping[str, Any] | None = None,
        **kw: Any,
    ) -> Response | ResponseContextManager:
        # Locust's FastHttpSession names a request by the URL it was given (HttpSession by the path it
        # requested): "a" on a host with a path is "a", an absolute URL its whole text, params left out.
        name = name or self.request_name or url
        if json is not None and not data and not (headers and ("Accept" in headers or "accept" in headers)):
            # Locust's FastHttpSession asks for JSON back when it sends JSON, unless the call says otherwise.
            headers = {**headers, "Accept": "application/json"} if headers else _ACCEPT_JSON
        if not self.max_retries:  # the common case, passed on without building a dict of keywords
            response = HttpSession.request(
                self, method, url, name, catch_response, context, data=data, stream=stream, headers=headers,
                auth=auth, json=json, allow_redirects=allow_redirects, **kw,
            )  # fmt: skip
            return _fast(response) if stream else response
        kw.update(name=name, data=data, stream=stream, headers=headers, auth=auth, json=json)
        kw.update(allow_redirects=allow_redirects, context=context)
        # Tries that got no response are dropped unrecorded: one request in the stats, as
        # geventhttpclient retries inside one of Locust's requests.
        for _ in range(self.max_retries + 1 if method.upper() in _IDEMPOTENT else 1):
            attempt = super().request(method, url, catch_response=True, **kw)
            assert isinstance(attempt, ResponseContextManager)
            if attempt.error not in _RETRIED:
                break
        assert isinstance(attempt, ResponseContextManager)
        if stream:
            _fast(attempt)
        if catch_response:
            return attempt
        ResponseContextManager.__enter__(attempt)  # judged as a block would, a streamed body left open
        ResponseContextManager.__exit__(attempt, None, None, None)
        return attempt

    def head(self, url: str, **kw: Any) -> Response | ResponseContextManager:
        """A HEAD that follows redirects, as Locust's FastHttpSession's does (requests' `head` does not)."""
        return self.request("HEAD", url, **kw)

    def iter_lines(self, url: str, method: str = "GET", **kwargs: Any) -> Iterator[str]:
        """The response's lines as they arrive (Locust's FastHttpSession.iter_lines: a streamed request,
        its body decoded as UTF-8 and split at "\n", the last line yielded even without one); fails like
        raise_for_status."""
        response = self.request(method, url, stream=True, **kwargs)
        response.raise_for_status()
        buffer = ""
        for chunk in response.iter_content(chunk_size=1024, decode_content=True):  # type: ignore[call-arg]
            buffer += chunk.decode("utf-8", errors="replace") if isinstance(chunk, bytes) else chunk
            while "\n" in buffer:
                line, buffer = buffer.split("\n", 1)
                yield line
        if buffer:
            yield buffer


class FastStreamedResponse(StreamedResponse):
    """FastHttpUser's response to `stream=True`, as Locust's FastResponse reads one: `iter_content`
    yields text where the bytes are UTF-8 (`decode_content`) and ends quietly at a cut (the stream is
    still counted cut), `read(n)` and `readline()` read the body as a file, `stream` is that file."""

    def iter_content(  # type: ignore[override]  # Locust's FastResponse's signature
        self, chunk_size: int = 1024, decode_content: bool = True
    ) -> Iterator[Any]:
        try:
            for chunk in StreamedResponse.iter_content(self, chunk_size):
                if decode_content:
                    with contextlib.suppress(UnicodeDecodeError):  # (Locust's: the chunk stays bytes)
                        chunk = chunk.decode("utf-8")
                yield chunk
        except (error_class("ChunkedEncodingError"), error_class("ConnectionError")):
            return

    def read(self, n: int | None = None) -> bytes:
        return self.raw.read(n)

    def readline(self) -> bytes:
        line = b""
        while not line.endswith(b"\n"):
            byte = self.raw.read(1)
            if not byte:
                break
            line += byte
        return line

    @property
    def stream(self) -> RawStream:
        return self.raw

    def release(self) -> None:
        self.close()


class FastStreamedContextManager(FastStreamedResponse, StreamedContextManager):
    """FastHttpUser's `catch_response=True` with `stream=True`."""


def _fast(response: Response | ResponseContextManager) -> Response | ResponseContextManager:
    """A streamed response made FastHttpUser's (`FastStreamedResponse`); any other as it is."""
    if isinstance(response, StreamedContextManager):
        response.__class__ = FastStreamedContextManager
    elif isinstance(response, StreamedResponse):
        response.__class__ = FastStreamedResponse
    return response


class FastHttpUser(SessionUser):
    """Locust's FastHttpUser: the engine's client with FastHttpUser's settings."""

    abstract = True
    session_class: ClassVar[type[HttpSession]] = FastHttpSession
    network_timeout: float = 60.0
    connection_timeout: float = 60.0
    max_redirects: int = 30
    max_retries: int = 0
    insecure: bool = True
    default_headers: dict[str, str] | None = None
    concurrency: int = 10
    proxy_host: str | None = None
    proxy_port: int | None = None
    client_pool: Any = None
    ssl_context_factory: Any = None

    def __init__(self, environment: Environment) -> None:
        User.__init__(self, environment)  # SessionUser's would make an HttpSession: this one takes these settings
        make = cast("type[FastHttpSession]", self.session_class)
        self.client = make(
            self.host,
            environment.events.request,
            self,
            insecure=self.insecure,
            client_pool=self.client_pool,
            ssl_context_factory=self.ssl_context_factory,
            network_timeout=self.network_timeout,
            connection_timeout=self.connection_timeout,
            max_redirects=self.max_redirects,
            max_retries=self.max_retries,
            concurrency=self.concurrency,
            headers=self.default_headers,
            proxy_host=self.proxy_host,
            proxy_port=self.proxy_port,
        )


# Locust's names for what its FastHttpSession returns, for the files that import them (type hints).
FastResponse = Response

__all__ = ["FastHttpSession", "FastHttpUser", "FastResponse", "ResponseContextManager", "RestResponseContextManager"]

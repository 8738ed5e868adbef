"""`self.client` of HttpUser and FastHttpUser: a requests-like session whose I/O runs in the engine.

Each call is one request event, redirects included (followed in the engine, timed as one request).
Cookies set by responses are kept in the engine, per user, and sent back to the host that set them.
4xx and 5xx count as failures unless `catch_response=True` decides otherwise."""

from __future__ import annotations

import base64
import codecs
import contextlib
import itertools
import json as jsonlib
import re
import time
from collections.abc import Iterable, Iterator, Mapping, MutableMapping, Sequence
from contextlib import contextmanager
from datetime import timedelta
from http import HTTPStatus
from json.encoder import c_make_encoder, encode_basestring_ascii  # type: ignore[attr-defined]  # (None: no C)
from types import MethodType
from typing import TYPE_CHECKING, Any, Callable, TypedDict, overload
from urllib.parse import unquote, urlencode, urlsplit, urlunsplit

import orjson
from greenlet import getcurrent

from squall import _engine, requests_compat
from squall._engine import CallBase, Prepared, joined_url
from squall.event import RequestHook
from squall.exception import CatchResponseError, LocustError, ResponseError
from squall.report.locust_errors import error_text
from squall.requests_compat import CaseInsensitiveDict, NotSupported, error_class
from squall.runtime.hub import current_hub, switch_greenlet

if TYPE_CHECKING:
    from types import TracebackType

    from squall.env import Environment
    from squall.runtime.hub import Hub

    # Query parameters as requests takes them: a mapping, (name, value) pairs, or an encoded string.
    Params = Mapping[str, Any] | Sequence[tuple[str, Any]] | str
    # (method, stats name, URL, context) of a request, for its request event.
    RequestMeta = tuple[str, str, str, Mapping[str, Any]]

    class _Call(TypedDict, total=False):
        """What a call gives beyond its method, URL and name: requests' keywords that shape the request."""

        params: Params | None
        data: Any
        headers: Mapping[str, Any] | None
        cookies: Mapping[str, str] | None
        files: Any
        auth: Any
        timeout: float | tuple[float | None, float | None] | None
        proxies: Mapping[str, str] | None
        verify: bool | str | None
        cert: str | tuple[str, str] | None
        json: Any


DEFAULT_TIMEOUT = 60.0
_ACCEPT_JSON = {"Accept": "application/json"}
# The ids of sessions made without a user, apart from users' ids (the engine keys connections by them).
_standalone_ids = itertools.count(1 << 40)


def __getattr__(name: str) -> Any:  # `locust.clients.HTTPError` and friends, made on first use
    if name in ("HTTPError", "ConnectionError", "InvalidURL"):
        return error_class(name)
    raise AttributeError(name)


METHODS_WITH_BODY = ("POST", "PUT", "PATCH")


class Headers(dict[str, str]):
    """Response headers, looked up without regard to case; repeated headers are joined with ", "
    as requests does."""

    def __init__(self, pairs: Iterable[tuple[str, str]] = ()) -> None:
        """`pairs`: (lower-case name, value) of each header, in order."""
        super().__init__()
        for k, v in pairs:
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


_WITH_BLOCK = "In order to use a with-block for requests, you must also pass catch_response=True"
# What Locust says when a response that was not caught is judged: its responses are all context
# managers, never entered without catch_response=True.
_NOT_ENTERED = (
    "Tried to set status on a request that has not yet been made. Make sure you use a with-block, like this:"
    "\n\nwith self.client.request(..., catch_response=True) as response:\n    response.{}"
)


class SentRequest:
    """`response.request`: what was sent (method, URL, headers, body), as requests keeps it."""

    __slots__ = ("body", "headers", "method", "url")

    def __init__(self, method: str, url: str, headers: list[tuple[str, str]], body: bytes) -> None:
        self.method = method
        self.url = url
        self.headers = CaseInsensitiveDict(headers)
        self.body = body or None

    @property
    def path_url(self) -> str:
        parts = urlsplit(self.url)
        return (parts.path or "/") + (f"?{parts.query}" if parts.query else "")


class Response(_engine.Response):
    """What a request came to: requests' Response attributes that locustfiles use. The engine makes it
    (its base class holds the status, URL, body, timing and the headers as they came, parsed in Rust
    when read, and gives `text` and `ok`); this class adds what requests and Locust say of it."""

    __slots__ = ("_headers", "_history")

    @property
    def elapsed(self) -> timedelta:
        return timedelta(microseconds=self.elapsed_us)

    @property
    def headers(self) -> Headers:
        try:
            return self._headers
        except AttributeError:  # built on first use: most scripts never read headers
            self._headers: Headers = Headers(self.header_pairs())
            return self._headers

    @property
    def request(self) -> SentRequest:
        headers, body = self.sent()
        return SentRequest(self.request_method, self.url, headers, body)

    @property
    def reason(self) -> str:
        try:
            return HTTPStatus(self.status_code).phrase
        except ValueError:
            return ""

    @property
    def is_redirect(self) -> bool:
        return "location" in self.headers and self.status_code in (301, 302, 303, 307, 308)

    @property
    def history(self) -> list[Response]:
        """The responses that redirected on the way here, first first, as requests (and geventhttpclient)
        keep them: each one's status, URL, headers, body and `request` (the hop it answered). The
        redirects are timed as one request: their own `elapsed` is 0."""
        try:
            return self._history
        except AttributeError:  # made on first use: most scripts never read it
            self._history: list[Response] = self.take_history()  # type: ignore[assignment]  # (of this class)
            return self._history

    def json(self, **kwargs: Any) -> Any:
        content = self.content
        if not kwargs and type(content) is bytes and not _engine.long_digit_run(content):
            # orjson where it reads the body as the standard library would: it refuses what json.loads
            # reads otherwise (NaN and Infinity, a lone surrogate, a BOM, UTF-16), which then goes to
            # json.loads below, and reads an integer past 64 bits as a float, so a body that may hold
            # one (19 digits in a row) goes there first. 3.5 µs -> 1.3 µs for a 100-byte object on the
            # development host (timeit), the file's own cost in Locust too.
            try:
                return orjson.loads(content)
            except orjson.JSONDecodeError:
                pass
        try:
            try:
                return jsonlib.loads(self.content, **kwargs)
            except UnicodeDecodeError:  # not the encoding its first bytes say: read as its text, as requests does
                return jsonlib.loads(self.text, **kwargs)
        except ValueError as e:
            raise requests_compat.json_error(e, self.text) from None

    def iter_content(self, chunk_size: int | None = 1, decode_unicode: bool = False) -> Iterator[Any]:
        """The body in chunks (already read whole: the engine times the request to its last byte)."""
        body: bytes | str = self.text if decode_unicode else self.content
        step = chunk_size or len(body) or 1
        for i in range(0, len(body), step):
            yield body[i : i + step]

    def iter_lines(
        self, chunk_size: int = 512, decode_unicode: bool = False, delimiter: str | bytes | None = None
    ) -> Iterator[Any]:
        body: bytes | str = self.text if decode_unicode else self.content
        yield from (body.split(delimiter) if delimiter else body.splitlines())  # type: ignore[arg-type]

    def close(self) -> None:
        pass

    def raise_for_status(self) -> None:
        exc = self.exception()
        if exc is not None:
            raise exc

    def exception(self, url: str | None = None) -> Exception | None:
        """The exception a failed request stands for, as requests raises it (naming `url`, by default
        the response's); None on success."""
        error = self.error
        if error is not None:
            # (an exception already: FastHttpSession's failed status, `HttpSession.status_error`)
            return error if isinstance(error, Exception) else error_class("ConnectionError")(error)
        if self.status_code and not self.ok:  # (`ok`: the engine's one rule of a failed status)
            kind = "Client" if self.status_code < 500 else "Server"
            where = url or self.url
            return error_class("HTTPError")(f"{self.status_code} {kind} Error: {self.reason} for url: {where}")
        return None

    # As in Locust: judging a response needs catch_response=True, and a with-block says so.
    def success(self) -> None:
        raise LocustError(_NOT_ENTERED.format("success()"))

    def failure(self, exc: object = None) -> None:
        raise LocustError(_NOT_ENTERED.format("failure(...)"))

    def __enter__(self) -> Response:
        raise LocustError(_WITH_BLOCK)

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        return None  # (never entered: __enter__ raises)

    def __bool__(self) -> bool:
        return self.ok

    def __repr__(self) -> str:
        return f"<Response [{self.status_code}]>"


class ResponseContextManager(Response):
    """`with self.client.get(..., catch_response=True) as response:` — the block decides success, as in
    Locust: `success()` or `failure()` win; else a ResponseError raised in the block fails it; else its
    status does. Any other exception leaves the block unreported and goes on to the task (Locust's rule:
    the exceptions table shows it). A failure is recorded under Locust's text for it, the repr of its
    exception (`CatchResponseError('...')`, `HTTPError('404 Client Error: ... for url: NAME')`).

    It is the response itself, as Locust's ResponseContextManager is a subclass of its response: the
    engine makes a caught request's response of this class (`_engine.use_response_class`), so the
    script reads its fields without a wrapper between (each read through one cost a Python call, and
    the wrapper's making, entering and reading 8 µs of a 34 µs caught request: bench/locustfiles/
    catch.py, 50 users). Without __slots__: a script may hang its own attributes on it (`resp.js` in
    `rest`), as on Locust's."""

    js: Any  # the body parsed as JSON, which `rest()` hangs on it (squall.user.users.rest)
    # Set by the session that made the request (HttpSession.request): who records the verdict, and the
    # request event's context.
    _session: HttpSession
    _context: Mapping[str, Any] | None = None
    _entered = False
    _judged = False  # success() or failure() was called
    _failure: BaseException | None = None
    # What "judged at exit" means beyond the status (GraphQL errors).
    _default_failure: str | None = None

    def __enter__(self) -> ResponseContextManager:
        self._entered = True
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool:
        if exc is None and (self._failure is None if self._judged else self.ok and not self._default_failure):
            # The common block: nothing raised, and success() called or nothing judged of a status that
            # is fine. Its verdict (a success) is queued for the engine's next poll as `_report` queues
            # it, without its frame, its getters and its checks, when nobody listens and the block
            # renamed nothing: an empty block of a caught response took 0.77 µs, 0.53 so (timeit,
            # enter and exit, this host).
            session = self._session
            hub, events = session.hub, session.request_event
            if (
                not hub.finished
                and not (events._handlers if type(events) is RequestHook else events)
                and "_request_meta" not in self.__dict__
            ):
                hub.verdicts.append((self, None))
                return True
        if self._judged:
            self._report(self._failure)
            return exc is None
        if exc is not None:
            if isinstance(exc, ResponseError):
                self._report(exc)
                return True
            return False
        failed = None if self.ok else self.exception(self.name)  # Locust names the request, not its URL, here
        if failed is None and self._default_failure:
            failed = CatchResponseError(self._default_failure)
        self._report(failed)
        return True

    @property
    def request_meta(self) -> dict[str, Any]:
        """Locust's dict of what the request event will be told (request_type, name, response_time,
        response_length, context, exception, start_time, url, response), made when first read: a block
        that sets its "name" or "request_type" records the request under them, as Locust's does."""
        meta: dict[str, Any] | None = self.__dict__.get("_request_meta")
        if meta is None:
            elapsed = self.elapsed_us / 1000.0
            meta = {
                "request_type": self.request_method,
                "name": self.name,
                "response_time": elapsed,
                "response_length": declared_length(self) if self.streamed else len(self.content),
                "context": self._context or {},
                "exception": None,
                "start_time": time.time() - elapsed / 1000.0,
                "url": self.url,
                "response": self,
            }
            self.__dict__["_request_meta"] = meta
        return meta

    def _report(self, failure: BaseException | None) -> None:
        """The verdict: recorded by the engine's next poll (Hub.judge, written out here: a frame less a
        request); the listeners of the request event, if any, told now (Locust names the request, not
        its URL, in its failure). A request the block renamed (`request_meta`) is recorded under its new
        name now, by a crossing of its own."""
        session = self._session
        hub = session.hub
        method, name = self.request_method, self.name
        renamed = self.__dict__.get("_request_meta")
        if renamed is not None and (renamed["name"] != name or renamed["request_type"] != method):
            method, name = str(renamed["request_type"]), str(renamed["name"])
            if not hub.finished:
                length = renamed["response_length"]
                text = error_text(failure) if failure is not None else None
                hub.engine.record(method, name, self.elapsed_us, self.status_code, length, text)
        elif not hub.finished:
            hub.verdicts.append((self, error_text(failure) if failure is not None else None))
        events = session.request_event
        if events._handlers if type(events) is RequestHook else events:  # (no __bool__ frame a request)
            meta = (method, name, self.requested_url, self._context or {})
            session._fire(events, self, meta, failure)

    def success(self) -> None:
        if not self._entered:
            raise LocustError(_NOT_ENTERED.format("success()"))
        self._judged, self._failure = True, None

    def failure(self, exc: object) -> None:  # type: ignore[override]  # Locust's: the reason is not optional here
        """Marks the request failed; `exc` is a message or an exception."""
        if not self._entered:
            raise LocustError(_NOT_ENTERED.format("failure(...)"))
        self._judged = True
        self._failure = exc if isinstance(exc, Exception) else CatchResponseError(exc)


def declared_length(response: Response) -> int:
    """The Content-Length a response's head gives, else 0 (what Locust records of a streamed one)."""
    try:
        return int(response.headers.get("content-length") or 0)
    except ValueError:
        return 0


class StreamedResponse(Response):
    """A response to `stream=True`, as requests' is then: it comes at its head, and its body is read
    as it arrives (`iter_content`, `iter_lines`, iterating it, `raw.read`), or at once by `content`,
    `text` and `json()`. The engine reads the body meanwhile, timing an event stream's events as they
    come; what the script has not taken yet waits in the engine (up to 64 MiB: past it, the stream is
    cut as too large). `close()` (or the end of a `with` block, or the response being dropped) hands its
    connection back to the user's pool if the body had ended, else closes it.

    A body cut short raises what requests raises from the iteration: ChunkedEncodingError (closed or
    reset mid-body, too large), ConnectionError (no bytes for the read timeout: `timeout=`'s second
    value, or the one number)."""

    _hub: Hub | None = None  # the hub of the engine it came from (the session's call sets it)
    _whole = False  # the body read whole into `content`
    _iterated = False  # part of the body was taken by iterating
    _ended = False  # the body has ended and all of it was taken
    _closed = False

    def _next(self, most: int | None) -> bytes:
        """The body's next bytes that have come, at most `most` (None: all), waiting for some if none
        has; b"" at its end. A cut body raises requests' exception once what came before is taken."""
        if self._ended or self._closed:
            return b""
        hub = self._hub or current_hub()  # (None: its session streams every call, `Session.stream`)
        if hub is None or hub.finished:
            raise LocustError("a streamed response is read while its test runs")
        engine = hub.engine
        while True:
            try:
                data = engine.stream_take(self.id, most)
            except _engine.StreamCut as e:
                self._ended = True
                raise _cut(str(e), self.url) from None
            if data is not None:
                if not data:
                    self._ended = True
                return data
            hub.wait_for(engine.stream_wait(self.id))

    @property
    def content(self) -> bytes:  # type: ignore[override]  # read-only here: it reads the rest of the body
        if not self._whole:
            if self._iterated:
                raise RuntimeError("The content for this response was already consumed")
            parts = []
            while data := self._next(None):
                parts.append(data)
            _CONTENT.__set__(self, b"".join(parts))
            self._whole = True
        return _CONTENT.__get__(self)  # type: ignore[no-any-return]

    @property
    def text(self) -> str:
        self.content  # noqa: B018  (reads the rest, which the engine's `text` decodes)
        return _TEXT.__get__(self)  # type: ignore[no-any-return]

    def iter_content(self, chunk_size: int | None = 1, decode_unicode: bool = False) -> Iterator[Any]:
        """The body as it arrives, in pieces of at most `chunk_size` bytes (None: each as it came); a
        piece is handed over as soon as it came, not held back to fill `chunk_size` (requests' way with
        a chunked body; with a Content-Length it would wait to fill it). `decode_unicode`: decoded as
        requests decodes them (the response's encoding; bytes when it has none)."""
        if self._whole:
            yield from super().iter_content(chunk_size, decode_unicode)
            return
        if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size < 1):
            raise TypeError(f"chunk_size must be an int, it is instead a {type(chunk_size)}.")
        decoder = None
        if decode_unicode:
            encoding = self.encoding  # (requests' reading of the headers unless the script set one)
            if encoding:
                decoder = codecs.getincrementaldecoder(encoding)(errors="replace")
        while True:
            data = self._next(chunk_size)
            if not data:
                break
            self._iterated = True
            if decoder is None:
                yield data
            elif text := decoder.decode(data):
                yield text
        if decoder is not None and (rest := decoder.decode(b"", final=True)):
            yield rest

    def iter_lines(
        self, chunk_size: int = 512, decode_unicode: bool = False, delimiter: str | bytes | None = None
    ) -> Iterator[Any]:
        """The body's lines as they arrive, as requests splits them (blank lines included)."""
        pending = None
        for chunk in self.iter_content(chunk_size=chunk_size, decode_unicode=decode_unicode):
            if pending is not None:
                chunk = pending + chunk
            lines = chunk.split(delimiter) if delimiter else chunk.splitlines()
            pending = lines.pop() if lines and lines[-1] and chunk and lines[-1][-1] == chunk[-1] else None
            yield from lines
        if pending is not None:
            yield pending

    def __iter__(self) -> Iterator[bytes]:
        return self.iter_content(128)

    @property
    def raw(self) -> RawStream:
        """requests' `raw`: the body as a file to `read(n)`."""
        raw: RawStream | None = self.__dict__.get("_raw")
        if raw is None:
            raw = self.__dict__["_raw"] = RawStream(self)
        return raw

    def close(self) -> None:
        """Done with it: its connection goes back to the user's pool if its body ended, else closes."""
        if not self._closed:
            self._closed = True
            hub = self._hub or current_hub()
            if hub is not None and not hub.finished:
                with contextlib.suppress(RuntimeError):  # (the engine's run has finished)
                    hub.engine.stream_close(self.id)

    def __del__(self) -> None:
        # Dropped unread: closed now (the engine would at its watchdog's next scan, which a user's
        # sleep may put off: it scans when the hub polls).
        if not self._closed:
            self.close()

    def __enter__(self) -> StreamedResponse:  # (requests' Response: closed at the block's end)
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        self.close()
        return None


class StreamedContextManager(StreamedResponse, ResponseContextManager):
    """`catch_response=True` with `stream=True`: the block judges the request, as in Locust (its time
    and size those of its head), and its end closes the stream."""

    def __enter__(self) -> StreamedContextManager:
        ResponseContextManager.__enter__(self)
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool:
        try:
            return ResponseContextManager.__exit__(self, exc_type, exc, tb)
        finally:
            self.close()


class RawStream:
    """A streamed response's `raw`, as far as scripts read urllib3's: `read(n)`, `stream(n)`, `close()`."""

    def __init__(self, response: StreamedResponse) -> None:
        self._response = response
        self._left = b""

    def read(self, amt: int | None = None, decode_content: bool | None = None) -> bytes:
        """`amt` bytes, waiting for them, fewer only at the body's end (None: all that is left)."""
        parts = [self._left]
        have = len(self._left)
        while amt is None or have < amt:
            data = self._response._next(None if amt is None else amt - have)
            if not data:
                break
            self._response._iterated = True
            parts.append(data)
            have += len(data)
        whole = b"".join(parts)
        if amt is None:
            self._left = b""
            return whole
        self._left = whole[amt:]
        return whole[:amt]

    def stream(self, amt: int = 2**16, decode_content: bool | None = None) -> Iterator[bytes]:
        while data := self.read(amt):
            yield data

    def close(self) -> None:
        self._response.close()

    @property
    def closed(self) -> bool:
        return self._response._closed

    def readable(self) -> bool:
        return True


# The engine's own `content` and `text` (descriptors), which a streamed response fills and reads.
_CONTENT: Any = vars(_engine.Response)["content"]
_TEXT: Any = vars(_engine.Response)["text"]


def _cut(why: str, url: str) -> Exception:
    """What requests raises from a streamed body cut short: ConnectionError for a read timeout (urllib3's
    ReadTimeoutError inside), else ChunkedEncodingError."""
    if why == "request timed out":
        return error_class("ConnectionError")(f"HTTPConnectionPool: Read timed out. ({url})")
    return error_class("ChunkedEncodingError")(f"Connection broken: {why}")


_engine.use_response_class(Response, ResponseContextManager, StreamedResponse, StreamedContextManager)


class RestResponseContextManager(ResponseContextManager):
    """Locust's `locust.contrib.fasthttp.RestResponseContextManager`, which files import to annotate what
    `rest()` yields: a caught response with `js`, its body parsed as JSON (None when empty). As in
    Locust, `rest()` yields a ResponseContextManager (with `js` set), not an instance of this class."""

    js: Any


class Cookie:
    """One cookie of `self.client.cookies`, as iterating requests' jar gives them."""

    __slots__ = ("domain", "name", "path", "value")

    def __init__(self, name: str, value: str, domain: str) -> None:
        self.name, self.value, self.domain, self.path = name, value, domain, "/"

    def __repr__(self) -> str:
        return f"<Cookie {self.name}={self.value} for {self.domain or '*'}/>"


class CookieJar(MutableMapping[str, str]):
    """`self.client.cookies`: the user's cookie jar, kept in the engine (which sends each cookie back to
    the host that set it). As requests' RequestsCookieJar: a dict of name -> value for lookups (`jar[name]`,
    `get`, `keys`, `items`, `get_dict`, `set`, `update`, `clear`), while iterating yields cookies (with
    `.name`, `.value`, `.domain`). A cookie set here without a domain goes to every host."""

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
        if value is None:
            self._engine.remove_cookies(self._user, name)
        else:
            self._engine.set_cookie(self._user, name, str(value))

    def __delitem__(self, name: str) -> None:
        if name not in self:
            raise KeyError(name)
        self._engine.remove_cookies(self._user, name)

    def __contains__(self, name: object) -> bool:
        return any(n == name for n, _, _ in self._all())

    def __iter__(self) -> Iterator[Cookie]:  # type: ignore[override]  # requests' jar yields cookies
        return iter([Cookie(n, v, d) for n, v, d in self._all()])

    def __len__(self) -> int:
        return len(self._all())

    def keys(self) -> list[str]:  # type: ignore[override]
        return list(dict.fromkeys(n for n, _, _ in self._all()))

    def values(self) -> list[str]:  # type: ignore[override]
        return list(self.get_dict().values())

    def items(self) -> list[tuple[str, str]]:  # type: ignore[override]
        return list(self.get_dict().items())

    def clear(self, domain: str | None = None, path: str | None = None, name: str | None = None) -> None:
        if name is not None:
            self._engine.remove_cookies(self._user, name)
        else:
            self._engine.remove_cookies(self._user)

    def get_dict(self, domain: str | None = None, path: str | None = None) -> dict[str, str]:
        return {n: v for n, v, d in self._all() if domain is None or d == domain}

    def set(self, name: str, value: str | None, domain: str = "", **_kw: Any) -> None:
        if value is None:
            self._engine.remove_cookies(self._user, name)
        else:
            self._engine.set_cookie(self._user, name, str(value), domain)

    def update(self, other: Any = (), /, **kw: str) -> None:
        pairs = other.items() if hasattr(other, "items") else other
        for n, v in [*pairs, *kw.items()]:
            self[n] = v

    def __repr__(self) -> str:
        return f"<CookieJar {self.get_dict()!r}>"


class HttpSession:
    """One user's session, shaped like requests' Session (which Locust's HttpSession is): `headers`,
    `auth`, `cookies`, `params`, `verify`, `max_redirects`, `hooks`, set in `on_start` and used by every
    request. The engine does the I/O: it joins the base and the URL, parses each once, keeps the
    connections and the cookie jar, and names the request by its path and query unless told otherwise.

    Every keyword requests' `Session.request` takes is accepted; those the engine cannot honour
    (`proxies`, `cert`, a CA bundle path for `verify`) raise NotSupported when used, and any other keyword
    is Python's TypeError, as in requests: nothing a script asks for is silently dropped."""

    # What FastHttpUser changes (see squall.contrib.fasthttp).
    default_insecure = False
    # Whose words Locust's client of this kind uses for a failed status (squall.report.locust_errors).
    locust_words = "requests"
    # Headers every request carries unless the script replaces them, as requests' defaults do (its
    # User-Agent, Accept and Connection; not Accept-Encoding: the engine does not decompress bodies).
    default_headers: tuple[tuple[str, str], ...] = (("Accept", "*/*"),)
    # The Content-Type a body of `data=` goes with unless the call or the session gives one: requests
    # sends none with text or bytes (FastHttpSession: geventhttpclient's, with their charset).
    text_type: str | None = None
    bytes_type: str | None = None
    form_type = "application/x-www-form-urlencoded"
    # How FastHttpSession's calls differ (`_call`): named by the URL they were given, not the path the
    # engine requests; asking for JSON back when they send JSON; retried (`max_retries`) in its `request`.
    names_by_url = False
    accepts_json = False
    max_retries = 0
    # What a response whose status failed has as its `error`, made from it: FastHttpSession's is
    # geventhttpclient's LocustBadStatusCode; requests' sessions leave `error` None then.
    status_error: Callable[[Response], Exception] | None = None
    # Whether a response's `url` has the call's `params=` in it (requests'), or is the URL the call was
    # given, its query made apart (FastHttpSession's: geventhttpclient's request keeps that one).
    url_has_params = True
    # What its calls share (CallBase) and the headers' converted list it was made with (see
    # `_call_base`); None until the first call and whenever a setting changes (`__setattr__`).
    _base: tuple[CallBase, list[tuple[str, str]]] | None
    # Set by __init__ (see there):
    base_url: str
    user: Any
    request_event: Any
    environment: Environment | None
    user_id: int
    hub: Hub
    _user_context: Callable[[], Mapping[str, Any]] | None
    headers: CaseInsensitiveDict
    auth: Any
    cookies: CookieJar
    params: dict[str, Any]
    verify: bool | str
    proxies: dict[str, str]
    cert: str | tuple[str, str] | None
    hooks: dict[str, list[Callable[..., Any]]]
    max_redirects: int
    trust_env: bool
    stream: bool
    request_name: str | None
    timeout: float | None

    def __init__(
        self, base_url: str | None, request_event: Any = None, user: Any = None, pool_manager: Any = None
    ) -> None:
        """Locust's signature: `HttpSession(base_url=..., request_event=..., user=...)`. A user's first
        session is its `client`; another one made for the same user (a second host, Locust's
        multiple_hosts.py) has its own connections and cookie jar, and closes with the user. Without a
        user, the session belongs to the running test (made in a `test_start` listener, say). Every
        request is recorded in the engine whatever `request_event` is; its listeners are notified of
        each (`pool_manager`, urllib3's, has nothing to tune: the engine keeps the connections)."""
        base, credentials = split_userinfo(base_url or "")
        environment: Environment | None
        if user is not None:
            environment = user.environment
            hub = user.hub
            # The user's own id for its first session (its client), which the engine closes when it stops;
            # a fresh one for each other (env.user_stopped closes them all).
            sessions = user.__dict__.setdefault("_squall_sessions", [])
            user_id = user.environment.next_user_id() if sessions else user.user_id
            sessions.append(user_id)
        else:
            environment = None
            running = current_hub()
            if running is None:
                raise LocustError("an HttpSession sends through a running test's engine: make it during the test")
            hub = running
            user_id = next(_standalone_ids)
        headers = CaseInsensitiveDict(self.default_headers)
        if credentials:  # a host given as http://user:secret@host/ authenticates every request, as in requests
            headers["Authorization"] = credentials
        settings = {
            "_base": None,
            "base_url": base,
            "user": user,
            "request_event": request_event,
            "environment": environment,
            "user_id": user_id,
            "hub": hub,
            # The user's `context()`, which tags its requests; None for a class that keeps User's own
            # (no tags), so that requests do not call it for nothing.
            "_user_context": (
                None if user is None or getattr(type(user).context, "tags_nothing", False) else user.context
            ),
            "headers": headers,
            "auth": None,
            "cookies": CookieJar(hub.engine, user_id),
            "params": {},
            "verify": True,
            "proxies": {},
            "cert": None,
            "hooks": {"response": []},
            "max_redirects": 30,
            "trust_env": True,
            "stream": False,
            "request_name": None,  # Locust's: the stats name of the requests that follow
            "timeout": None,  # squall's: every request's timeout unless the call gives one
        }
        set_settings(self, settings)

    @contextmanager
    def rename_request(self, name: str) -> Iterator[None]:
        """Groups the requests made inside the block under one stats name."""
        previous, self.request_name = self.request_name, name
        try:
            yield
        finally:
            self.request_name = previous

    def mount(self, prefix: str, adapter: Any) -> None:
        """requests' transport adapters tune connection pools: the engine keeps its own; accepted."""

    def close(self) -> None:
        pass

    def request(
        self,
        method: str,
        url: str,
        name: str | None = None,
        catch_response: bool = False,
        context: Mapping[str, Any] | None = None,
        *,
        params: Params | None = None,
        data: Any = None,
        headers: Mapping[str, Any] | None = None,
        cookies: Mapping[str, str] | None = None,
        files: Any = None,
        auth: Any = None,
        timeout: float | tuple[float | None, float | None] | None = None,
        allow_redirects: bool = True,
        proxies: Mapping[str, str] | None = None,
        hooks: Mapping[str, Any] | None = None,
        stream: bool | None = None,
        verify: bool | str | None = None,
        cert: str | tuple[str, str] | None = None,
        json: Any = None,
        **unexpected: Any,
    ) -> Response | ResponseContextManager:
        """One request, as requests' `Session.request` takes it (and Locust's `name`, `catch_response`,
        `context`). With `catch_response=True` the result is a context manager whose block judges it."""
        if unexpected:  # requests' own words, which Locust's exceptions table shows
            raise TypeError(f"Session.request() got an unexpected keyword argument '{next(iter(unexpected))}'")
        if (
            cookies is None
            and files is None
            and auth is None
            and verify is None
            and cert is None
            and proxies is None
            and hooks is None
        ):
            answered = self._call(
                method, url, name, catch_response, context, params, data, json, headers, allow_redirects, timeout,
                stream,
            )  # fmt: skip
            if answered is not None:
                return answered
        # Anything else that shapes a request (cookies, files, an auth, a CA bundle, proxies or a client
        # certificate, form data, the session's params or proxies) is prepared here, as requests prepares it.
        if not name:  # (an empty name too: Locust names the request by its path then)
            name = self.request_name or None
        hub = self.hub
        call: _Call = {
            "params": params, "data": data, "headers": headers, "cookies": cookies, "files": files,
            "auth": auth, "timeout": timeout, "proxies": proxies, "verify": verify, "cert": cert, "json": json,
        }  # fmt: skip
        try:
            prepared = self._prepare(method, url, name, catch_response, allow_redirects, call)
            if stream or (stream is None and self.stream):
                op = hub.engine.send_stream(self.user_id, prepared, self._read_timeout(timeout))
            else:
                op = hub.engine.send(self.user_id, prepared)
        except ValueError as e:
            raise _refused(e, method, self._joined(url)) from None
        response: Response = hub.wait_for(op)
        if stream:
            response._hub = hub  # type: ignore[attr-defined]  # (a StreamedResponse: its engine's hub)
        if self.status_error is not None and not response.ok and response.error is None:
            response.error = self.status_error(response)
        if params and not self.url_has_params:
            self._url_given(response, url)
        return self._answered(response, catch_response, context, hooks)

    def _url_given(self, response: Response, url: str) -> None:
        """FastHttpSession's `url` of a call with `params=`: the URL the call was given, without them, as
        geventhttpclient's request keeps it; after a redirect, the URL it led to (its request's, moved)."""
        if response.status_code and not response.history:
            response.url = self._joined(url)

    def _call(
        self,
        method: str,
        url: str,
        name: str | None,
        catch_response: bool,
        context: Mapping[str, Any] | None,
        params: Params | None,
        data: Any,
        json: Any,
        headers: Mapping[str, Any] | None,
        allow_redirects: bool,
        timeout: float | tuple[float | None, float | None] | None,
        stream: bool | None = False,
    ) -> Response | ResponseContextManager | None:
        """The calls of most scripts, in one frame: what they add to the session's settings
        (`_call_base`) crosses into the engine as it is, and the engine makes the request
        (ScriptEngine.call; a streamed call, `stream=True`, as a Prepared from the same CallBase, sent
        by `send_stream`). None, before anything is sent, when the call or the session needs the
        request prepared in Python (`request` then prepares it): the session's params or proxies,
        form data, a header that is not text, a setting `_call_base` cannot carry. `get` and `post`
        call it straight, without `request`'s 25 keywords (0.6-1.5 us a call, timed against an engine
        never polled: the frame and the dicts of keywords passed on)."""
        base = self._base
        if base is None or base[1] is not self.headers._sent:
            base = self._call_base()
            if base is None:
                return None
        if self.params or self.proxies:
            return None
        if not name:
            name = self.request_name or (url if self.names_by_url else None)
        body = content_type = None
        merged: dict[str, Any] | list[tuple[str, Any]] | None = None
        if data is not None:
            if isinstance(data, str):
                body, content_type = data.encode(), self.text_type
            elif isinstance(data, bytes):
                body, content_type = data, self.bytes_type
            else:
                return None
        elif json is not None:
            body, content_type = json_body(json), "application/json"
        if (
            json is not None
            and self.accepts_json
            and not data
            and not (headers and ("Accept" in headers or "accept" in headers))
        ):
            # FastHttpSession asks for JSON back when it sends JSON, unless the call says otherwise.
            headers = {**headers, "Accept": "application/json"} if headers else _ACCEPT_JSON
        if headers:
            # Merged with the session's in the engine, which reads a dict's items in place.
            merged = headers if type(headers) is dict else list(headers.items())
        hub = self.hub
        target = _with_query(url, params) if params else url
        seconds = None if timeout is None else _seconds(timeout)
        try:
            if stream:  # (requests' stream=True: its response comes at its head)
                prepared = base[0].prepare(
                    method, target, name, not catch_response, allow_redirects, body, merged, content_type, seconds,
                )  # fmt: skip
                op = hub.engine.send_stream(self.user_id, prepared, self._read_timeout(timeout))
            else:
                op = hub.engine.call(
                    self.user_id, base[0], method, target, name, not catch_response, allow_redirects, body, merged,
                    content_type, seconds,
                )  # fmt: skip
        except TypeError:
            if merged is None:
                raise
            return None  # a header that is not text: requests' conversion (bytes) or its InvalidHeader
        except ValueError as e:
            raise _refused(e, method, self._joined(url)) from None
        # Hub.wait_for, written out (a frame less a request).
        g = getcurrent()
        hub.pending[op] = g
        try:
            response: Response = switch_greenlet(hub.main)
        except BaseException:
            hub.abandon(op, g)
            raise
        if stream:
            response._hub = hub  # type: ignore[attr-defined]  # (a StreamedResponse: its engine's hub)
        if self.status_error is not None and not response.ok and response.error is None:
            response.error = self.status_error(response)
        if params and not self.url_has_params:
            self._url_given(response, url)
        # `_answered`'s common cases, without its frame: no response hook and no user context, a caught
        # response handed to its with-block, any other returned when nobody listens to the request event
        # (the engine recorded it; a RequestHook's listeners read without its __bool__'s frame).
        if self._user_context is None and not self.hooks.get("response"):
            if catch_response:
                caught: ResponseContextManager = response  # type: ignore[assignment]  # the engine's caught class
                caught._session = self
                if context:
                    caught._context = context
                return caught
            events = self.request_event
            if not (events._handlers if type(events) is RequestHook else events):
                return response
        return self._answered(response, catch_response, context, None)

    def _answered(
        self,
        response: Response,
        catch_response: bool,
        context: Mapping[str, Any] | None,
        hooks: Mapping[str, Any] | None,
    ) -> Response | ResponseContextManager:
        """A call's response once it came: the response hooks run, the user's context added, then either
        handed to the with-block (`catch_response`) or told to the request event's listeners."""
        if hooks or self.hooks.get("response"):
            for hook in _hooks(self.hooks, hooks):
                replaced = hook(response)
                response = replaced if isinstance(replaced, type(response)) else response  # (a caught one stays caught)
        if self._user_context is not None:
            context = {**self._user_context(), **(context or {})}
        if catch_response:
            caught: ResponseContextManager = response  # type: ignore[assignment]  # the engine's caught class
            caught._session = self
            if context:
                caught._context = context
            return caught
        events = self.request_event
        if events:  # (Locust's event tells the URL requested, before any redirect)
            meta: RequestMeta = (response.request_method, response.name, response.requested_url, context or {})
            self._fire(events, response, meta, response.exception(response.name))
        return response

    def _read_timeout(self, timeout: float | tuple[float | None, float | None] | None) -> float:
        """A streamed body's read timeout, as requests takes it from `timeout=`: the second of a
        (connect, read) pair, or the one number; else the session's."""
        read = timeout[1] if isinstance(timeout, tuple) else timeout
        return float(read or self.timeout or DEFAULT_TIMEOUT)

    def _call_base(self) -> tuple[CallBase, list[tuple[str, str]]] | None:
        """What the session's calls share now (kept in `_base` while its settings and headers hold:
        `__setattr__` forgets it, and a header changed in place makes a new converted list), with the
        headers' converted list it was made with; None while a setting of the session needs each call
        prepared in Python (an auth, a client certificate, a CA bundle path, `stream = True`)."""
        if self.auth is not None or self.cert is not None or self.stream:
            return None
        if not isinstance(self.verify, bool):
            return None
        header_list = requests_compat.merge_headers(self.headers, None)
        headers = self.headers
        sent = headers._sent if isinstance(headers, CaseInsensitiveDict) else None
        timeout = float(self.timeout or DEFAULT_TIMEOUT)
        insecure = self.verify is False or self.default_insecure
        made = CallBase(self.base_url, header_list, timeout, self.max_redirects, insecure)
        if sent is None:
            return (made, header_list)  # headers that are not squall's dict: made anew each call
        object.__setattr__(self, "_base", (made, sent))
        return self._base

    def _prepare(
        self, method: str, url: str, name: str | None, catch_response: bool, allow_redirects: bool, call: _Call
    ) -> Prepared:
        """A call made into what the engine sends, as requests prepares it: the URL joined to the base
        and given its query, the session's headers and the call's merged, the body encoded, the auth
        applied."""
        params, data, headers, cookies = call.get("params"), call.get("data"), call.get("headers"), call.get("cookies")
        files, auth, timeout, proxies = call.get("files"), call.get("auth"), call.get("timeout"), call.get("proxies")
        verify, cert, json = call.get("verify"), call.get("cert"), call.get("json")
        method = method.upper()
        if proxies or self.proxies:
            raise NotSupported("proxies are not supported by squall: its engine connects to the target directly")
        if cert is not None or self.cert is not None:
            raise NotSupported("client certificates (cert=) are not supported by squall yet")
        verify = self.verify if verify is None else verify
        if isinstance(verify, str):
            raise NotSupported("verify=<CA bundle path> is not supported by squall: use verify=False or the system CAs")
        url = self._joined(url)
        query = _merged_params(self.params, params) if self.params else params
        if query:
            url = _with_query(url, query)
        header_list = requests_compat.merge_headers(self.headers, headers)
        body = b""
        # A body's Content-Type goes with it unless the call or the session set one (requests' rule).
        typed = any(k.lower() == "content-type" for k, _ in header_list)
        if files:
            body, content_type = requests_compat.encode_files(files, data)
            if not typed:
                header_list.append(("Content-Type", content_type))
        elif data is not None and not (isinstance(data, (dict, list)) and not data):
            body = self._encode_data(data, header_list, typed)
        elif json is not None:
            body = json_body(json)
            if not typed:
                header_list.append(("Content-Type", "application/json"))
        auth = auth if auth is not None else self.auth
        if auth is not None:
            url, header_list = requests_compat.apply_auth(auth, method, url, header_list, body)
        return Prepared(
            method,
            url,
            base=self.base_url,
            name=name,
            headers=header_list,
            cookies=list(cookies.items()) if cookies else [],
            body=body,
            timeout=float(_seconds(timeout) or self.timeout or DEFAULT_TIMEOUT),
            record=not catch_response,
            max_redirects=self.max_redirects if allow_redirects else None,
            insecure=verify is False or self.default_insecure,
        )

    def _joined(self, url: str) -> str:
        """The call's URL on the session's base, as Locust joins them (the engine's one join:
        squall._engine.joined_url)."""
        return joined_url(self.base_url, url)

    def __init_subclass__(cls, **kw: Any) -> None:
        """A subclass with its own `request` (not squall's FastHttpSession, which names its own in
        `own_request`) gets `get` and `post` that pass each call on to it as the script gave it."""
        super().__init_subclass__(**kw)
        if "request" in vars(cls) and "own_request" not in vars(cls):
            for verb, forward in _FORWARDING.items():
                if verb not in vars(cls):
                    setattr(cls, verb, forward)

    def __setattr__(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)
        if name == "request":  # a session's own `request` (a script wrapping it): its verbs call it
            for verb, forward in _FORWARDING.items():
                object.__setattr__(self, verb, MethodType(forward, self))
        # A setting that may change what a call sends: the calls' CallBase is made anew (nothing to
        # forget while none is kept, as when __init__ sets its 24 attributes).
        if name != "request_name" and self.__dict__.get("_base"):
            object.__setattr__(self, "_base", None)

    def _encode_data(self, data: Any, header_list: list[tuple[str, str]], typed: bool) -> bytes:
        """requests' `data=`: form fields (a dict or pairs) are urlencoded; text, bytes or a file go as
        they are. Each with the session's type for it (`form_type`, `text_type`, `bytes_type`: none for
        a file) unless the call or the session gave a Content-Type."""
        if isinstance(data, (dict, list, tuple)):
            kind: str | None = self.form_type
            body = _encode_params(data).encode()
        elif hasattr(data, "read"):
            kind, data = None, data.read()
            body = data.encode() if isinstance(data, str) else bytes(data)
        elif isinstance(data, str):
            kind, body = self.text_type, data.encode()
        else:
            kind, body = self.bytes_type if isinstance(data, bytes) else None, bytes(data)
        if kind and not typed:
            header_list.append(("Content-Type", kind))
        return body

    @staticmethod
    def _fire(hook: Any, response: Response, meta: RequestMeta, exception: BaseException | None) -> None:
        method, name, url, context = meta
        start_time = time.time() - response.elapsed_us / 1e6
        # The engine measured it: the run's RequestHook notifies its listeners only, not its recorder
        # (squall.event); another hook a file gave (Locust's NoOpEvent, its own EventHook) is fired.
        notify = hook.notify if isinstance(hook, RequestHook) else hook.fire
        notify(
            request_type=method,
            name=name,
            response_time=response.elapsed_us / 1000.0,
            # (a streamed response's, as Locust's, is its Content-Length or 0: its body is still to read)
            response_length=declared_length(response) if response.streamed else len(response.content),
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
        ctx._default_failure = _graphql_error(ctx)
        if catch_response:
            return ctx
        with ctx:
            pass
        return ctx

    # `get` and `post` send the calls of most scripts through `_call`, taking their common keywords
    # themselves (no dict of keywords made, nor passed on: 0.5-1 us of a 30 us request). A class or a
    # session with its own `request` has verbs that pass every call on to it as the script gave it
    # (`__init_subclass__`, `__setattr__`), as requests' do.
    def get(
        self,
        url: str,
        *,
        name: str | None = None,
        catch_response: bool = False,
        headers: Mapping[str, Any] | None = None,
        params: Params | None = None,
        **kw: Any,
    ) -> Response | ResponseContextManager:
        if not kw and not self.max_retries:
            answered = self._call("GET", url, name, catch_response, None, params, None, None, headers, True, None)
            if answered is not None:
                return answered
        return self.request("GET", url, name=name, catch_response=catch_response, headers=headers, params=params, **kw)

    def post(
        self,
        url: str,
        data: Any = None,
        json: Any = None,
        *,
        name: str | None = None,
        catch_response: bool = False,
        headers: Mapping[str, Any] | None = None,
        params: Params | None = None,
        **kw: Any,
    ) -> Response | ResponseContextManager:
        if not kw and not self.max_retries:
            answered = self._call("POST", url, name, catch_response, None, params, data, json, headers, True, None)
            if answered is not None:
                return answered
        return self.request(
            "POST", url, data=data, json=json, name=name, catch_response=catch_response, headers=headers,
            params=params, **kw,
        )  # fmt: skip

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


def _forward_get(self: HttpSession, url: str, **kw: Any) -> Response | ResponseContextManager:
    return self.request("GET", url, **kw)


def _forward_post(
    self: HttpSession, url: str, data: Any = None, json: Any = None, **kw: Any
) -> Response | ResponseContextManager:
    return self.request("POST", url, data=data, json=json, **kw)


# The verbs of a session whose `request` is its own (HttpSession.__init_subclass__): requests'.
_FORWARDING = {"get": _forward_get, "post": _forward_post}


# json.dumps(obj) with its defaults, as requests and Locust encode `json=`: the same C encoder with the
# same settings, made once instead of for every call (json.dumps makes it, and its dict of the
# containers being encoded, each time: 3.7 µs -> 1.5 µs for a 4-key dict on the development host).
_MARKERS: dict[int, Any] = {}  # the containers being encoded (a cycle is json's ValueError); empty between calls
_ENCODE = (
    c_make_encoder(
        _MARKERS, jsonlib.JSONEncoder().default, encode_basestring_ascii, None, ": ", ", ", False, False, True
    )
    if c_make_encoder is not None
    else None
)


def json_body(obj: Any) -> bytes:
    """`json=`'s body: json.dumps(obj), encoded (by the engine for plain data: `_engine.json_dumps`)."""
    made = _engine.json_dumps(obj)
    if made is not None:
        return made
    if _ENCODE is None or isinstance(obj, str):
        return jsonlib.dumps(obj).encode()
    try:
        return "".join(_ENCODE(obj, 0)).encode()
    except BaseException:
        _MARKERS.clear()  # (left mid-way: what it was encoding stays marked)
        raise


def _seconds(timeout: float | tuple[float | None, float | None] | None) -> float | None:
    """requests' timeout, (connect, read) or one number, as the one deadline the engine keeps: the sum;
    None for none given (None or 0: the session's)."""
    total = sum(t for t in timeout if t) if isinstance(timeout, tuple) else timeout
    return float(total) if total else None


def _with_query(url: str, query: Params | bytes) -> str:
    """The URL with requests' `params=` added to its query (before a fragment): text (or ASCII bytes) as it
    is, pairs encoded as requests encodes them (`_encode_params`); the URL as it was when they give
    nothing."""
    if isinstance(query, str):
        encoded = query
    elif isinstance(query, bytes):
        encoded = query.decode("ascii")  # (requests' to_native_string)
    else:
        made = _engine.encoded_params(query)  # (the common dicts and lists; None: anything else)
        encoded = made if made is not None else _encode_params(query)
    if not encoded:
        return url
    head, mark, fragment = url.partition("#")
    if "?" not in head:
        head += "?"
    elif not head.endswith("?"):
        head += "&"
    return head + encoded + mark + fragment


def _encode_params(data: Any) -> str:
    """requests' `RequestEncodingMixin._encode_params` of pairs (geventhttpclient's is the same): a
    mapping's items or a list of pairs; a value that is not text or bytes but iterable gives a pair per
    item; None values dropped; text as UTF-8; then `urlencode(doseq=True)`. (squall._engine.encoded_params
    writes the same for the common cases, faster.)"""
    result: list[tuple[Any, Any]] = []
    for k, vs in _key_val_list(data):
        if isinstance(vs, (str, bytes)) or not hasattr(vs, "__iter__"):
            vs = [vs]
        for v in vs:
            if v is not None:
                result.append((k.encode() if isinstance(k, str) else k, v.encode() if isinstance(v, str) else v))
    return urlencode(result, doseq=True)


def _key_val_list(value: Any) -> list[tuple[Any, Any]]:
    """requests' `to_key_val_list`: a mapping's items, or the pairs of a list (text, bytes, a bool or an
    int are not pairs: its ValueError)."""
    if isinstance(value, (str, bytes, bool, int)):
        raise ValueError("cannot encode objects that are not 2-tuples")
    return list(value.items()) if isinstance(value, Mapping) else list(value)


def _merged_params(session: Params, call: Params | None) -> Params:
    """requests' `merge_setting` of the session's `params` and a call's: the call's keys over the
    session's, a None value removing one; a call's that is not a mapping (text, a list of pairs) is
    taken alone."""
    if call is None:
        return session
    if not (isinstance(session, Mapping) and isinstance(call, Mapping)):
        return call
    merged = dict(_key_val_list(session))
    merged.update(_key_val_list(call))
    return {k: v for k, v in merged.items() if v is not None}


def _refused(e: ValueError, method: str, url: str) -> Exception:
    """What a request the engine refused to make raises, in the words requests and Locust use: an
    invalid URL is urllib3's InvalidURL, an invalid method geventhttpclient's ValueError."""
    if "invalid URL" in str(e):
        netloc = urlsplit(url).netloc
        return error_class("InvalidURL")(f"Failed to parse: '{netloc}' is not a valid host or port")
    if str(e).startswith("invalid HTTP method"):
        return ValueError(f"invalid HTTP method {method.upper()!r}")
    return e


def _hooks(session: Mapping[str, Any], call: Mapping[str, Any] | None) -> list[Callable[..., Any]]:
    """requests' response hooks: the session's, then the call's."""
    found: list[Callable[..., Any]] = []
    for hooks in (session, call or {}):
        h = hooks.get("response")
        found.extend(h if isinstance(h, (list, tuple)) else [h] if h else [])
    return found


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


_plain: dict[tuple[type, tuple[str, ...]], bool] = {}  # (session class, names): settable at once


def _plain_settings(cls: type, settings: dict[str, Any]) -> bool:
    """Whether setting `settings` on an instance of `cls` is writing them to its __dict__: HttpSession's
    own __setattr__, and no property or other descriptor of those names (a subclass may add one)."""
    key = (cls, tuple(settings))
    plain = _plain.get(key)
    if plain is None:
        own = cls.__setattr__ is HttpSession.__dict__["__setattr__"]
        plain = _plain[key] = own and not any(hasattr(type(getattr(cls, a, None)), "__set__") for a in settings)
    return plain


def set_settings(session: HttpSession, settings: dict[str, Any]) -> None:
    """A session's settings as its __init__ makes them: at once where that is the same as one by one
    (`_plain_settings`). One by one through __setattr__ cost 10 µs of a user's start (24 calls of a
    Python method; 0.01 CPU-s of starting 1,000)."""
    if _plain_settings(type(session), settings):
        session.__dict__.update(settings)
    else:
        for attr, value in settings.items():
            setattr(session, attr, value)


def split_userinfo(url: str) -> tuple[str, str | None]:
    """(the URL without `user:secret@`, its basic-authentication header value or None)."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url, None
    userinfo, host = parts.netloc.rsplit("@", 1)
    user, _, password = userinfo.partition(":")
    token = base64.b64encode(f"{unquote(user)}:{unquote(password)}".encode()).decode()
    return urlunsplit(parts._replace(netloc=host)), f"Basic {token}"

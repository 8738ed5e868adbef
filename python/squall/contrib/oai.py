"""`locust.contrib.oai` (experimental in Locust, as here): `OpenAIUser`, whose `self.client` is the
`openai` SDK's client (OPENAI_API_KEY or LOCUST_OPENAI_API_KEY must be set, OPENAI_BASE_URL points it
elsewhere) on an httpx client whose hooks fire each HTTP request it sends: its method as the type, its
URL's path as the name (or the name `with self.client.rename_request(NAME):` gives), an HTTP error
status as the failure, and the answer's `usage.output_tokens` as the response length (Locust's choice:
more telling than bytes).

Under squall the httpx client sends through the engine (`EngineTransport`): each request on the user's
own connections, streamed (`stream=True`: the SDK's streamed answers are read as they arrive), its
event stream's events timed by the engine under the same name (time to first event, gaps: the
tokens' pace); the hooks above still record the request, the engine does not record it again. A
streamed answer (`stream=True` in the SDK's call) is recorded at its head, its length 0: Locust's hook
reads every answer whole as JSON, which an event stream is not (there the call fails)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import httpx
from openai import OpenAI

from squall.clients import HttpSession, StreamedResponse
from squall.requests_compat import error_class
from squall.user.users import User

if TYPE_CHECKING:
    from squall.env import Environment
    from squall.event import EventHook

# As in newer Locust: LOCUST_OPENAI_API_KEY stands for OPENAI_API_KEY (Locust Cloud forwards only
# LOCUST_* variables); Locust's words when neither is set.
if "LOCUST_OPENAI_API_KEY" in os.environ:
    os.environ["OPENAI_API_KEY"] = os.environ["LOCUST_OPENAI_API_KEY"]
if "OPENAI_API_KEY" not in os.environ:
    raise Exception("You need to set OPENAI_API_KEY or LOCUST_OPENAI_API_KEY env var to use OpenAIUser")


class OpenAIClient(OpenAI):
    def __init__(self, request_event: EventHook, user: User, *args: Any, **kwargs: Any) -> None:
        self.request_name: str | None = None  # instead of the URL's path (rename_request)
        self.user = user

        def request_start(request: httpx.Request) -> None:
            request.extensions["squall_start"] = (time.time(), time.perf_counter())

        def request_end(response: httpx.Response) -> None:
            start_time, start = response.request.extensions["squall_start"]
            streamed = response.headers.get("content-type", "").startswith("text/event-stream")
            if not streamed:  # (a streamed answer is the SDK's to read, as it comes)
                response.read()
            response_time = (time.perf_counter() - start) * 1000
            exception = None
            try:
                response.raise_for_status()
            except httpx.HTTPStatusError as e:
                exception = e
            request_event.fire(
                request_type=response.request.method,
                name=self.request_name or response.url.path,
                context={},
                response=response,
                exception=exception,
                start_time=start_time,
                response_time=response_time,
                response_length=0 if streamed else response.json().get("usage", {}).get("output_tokens", 0),
                url=response.url,
            )

        # httpx's Client, as Locust's (the SDK takes it as well as httpx2's, which its annotation names),
        # sending through the engine.
        transport = EngineTransport(HttpSession(None, None, user), lambda request: self.request_name)
        http_client: Any = httpx.Client(
            transport=transport, event_hooks={"request": [request_start], "response": [request_end]}
        )
        super().__init__(*args, **kwargs, http_client=http_client)

    @contextmanager
    def rename_request(self, name: str) -> Iterator[None]:
        """The requests sent within the block are named `name`."""
        self.request_name = name
        try:
            yield
        finally:
            self.request_name = None


class OpenAIUser(User):
    abstract = True

    def __init__(self, environment: Environment) -> None:
        super().__init__(environment)
        self.client = OpenAIClient(self.environment.events.request, user=self)


# What httpx puts in a request that the engine writes itself.
_ENGINE_HEADERS = frozenset({"host", "content-length", "transfer-encoding", "connection"})


class EngineTransport(httpx.BaseTransport):
    """An httpx transport over squall's engine: each request sent by `session` (a user's: its
    connections, its TLS), streamed, so that the response comes at its head and its body is read as it
    arrives (httpx decodes its Content-Encoding, as it would its own). The engine does not record the
    request (the client's hooks do: `catch_response`, never judged), but times an event stream's events
    under the name `name(request)` gives (None: its path), the hooks' name."""

    def __init__(self, session: HttpSession, name: Callable[[httpx.Request], str | None]) -> None:
        self.session = session
        self.name = name

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        body = request.read()
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _ENGINE_HEADERS}
        timeout = request.extensions.get("timeout", {})
        read_timeout = timeout.get("read") or timeout.get("pool")
        response = self.session.request(
            request.method,
            str(request.url),
            name=self.name(request) or request.url.path,
            catch_response=True,
            stream=True,
            data=body or None,
            headers=headers,
            timeout=(None, read_timeout) if read_timeout else None,
            allow_redirects=False,  # (httpx follows them itself when asked)
        )
        if response.error is not None:
            kind = httpx.ReadTimeout if response.error == "request timed out" else httpx.ConnectError
            raise kind(str(response.error), request=request)
        assert isinstance(response, StreamedResponse)
        return httpx.Response(
            response.status_code,
            headers=response.header_pairs(),
            stream=_EngineStream(response, request),
            request=request,
            extensions={"http_version": b"HTTP/1.1"},
        )


class _EngineStream(httpx.SyncByteStream):
    """A streamed response's body as httpx reads one: each piece as it came; a cut body is httpx's
    RemoteProtocolError, a read timeout its ReadTimeout."""

    def __init__(self, response: StreamedResponse, request: httpx.Request) -> None:
        self.response = response
        self.request = request

    def __iter__(self) -> Iterator[bytes]:
        try:
            yield from self.response.iter_content(None)
        except error_class("ConnectionError") as e:
            raise httpx.ReadTimeout(str(e), request=self.request) from None
        except error_class("ChunkedEncodingError") as e:
            raise httpx.RemoteProtocolError(str(e), request=self.request) from None

    def close(self) -> None:
        self.response.close()

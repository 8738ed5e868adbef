"""`locust.contrib.oai` (experimental in Locust, as here): `OpenAIUser`, whose `self.client` is the
`openai` SDK's client (OPENAI_API_KEY must be set, OPENAI_BASE_URL points it elsewhere) on an httpx
client whose hooks fire each HTTP request it sends: its method as the type, its URL's path as the name
(or the name `with self.client.rename_request(NAME):` gives), an HTTP error status as the failure, and
the answer's `usage.output_tokens` as the response length (Locust's choice: more telling than bytes).
httpx's sockets are gevent's under squall as under Locust, so users waiting on the API wait together."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import httpx
from openai import OpenAI

from squall.user.users import User

if TYPE_CHECKING:
    from squall.env import Environment
    from squall.event import EventHook

if "OPENAI_API_KEY" not in os.environ:
    raise Exception("You need to set OPENAI_API_KEY env var to use OpenAIUser")  # Locust's words


class OpenAIClient(OpenAI):
    def __init__(self, request_event: EventHook, user: User, *args: Any, **kwargs: Any) -> None:
        self.request_name: str | None = None  # instead of the URL's path (rename_request)
        self.user = user

        def request_start(request: httpx.Request) -> None:
            request.extensions["squall_start"] = (time.time(), time.perf_counter())

        def request_end(response: httpx.Response) -> None:
            start_time, start = response.request.extensions["squall_start"]
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
                response_length=response.json().get("usage", {}).get("output_tokens", 0),
                url=response.url,
            )

        # httpx's Client, as Locust's (the SDK takes it as well as httpx2's, which its annotation names)
        http_client: Any = httpx.Client(event_hooks={"request": [request_start], "response": [request_end]})
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

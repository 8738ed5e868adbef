"""`locust.contrib.dns` (Locust 2.42): `DNSUser`, whose `self.client` has every function of dnspython's
`dns.query` (`udp`, `tcp`, `https`, `tls`, `quic`, ...), each call a `DNS` request named by the function
(or `name=`), timed; a DNSException, or an answer without records, is its failure. dnspython's sockets
are gevent's under squall as under Locust: users waiting on a server wait together."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Callable

import dns.query
from dns.exception import DNSException

from squall.exception import LocustError
from squall.user.users import User

if TYPE_CHECKING:
    from dns.message import Message

    from squall.env import Environment
    from squall.event import EventHook


class DNSClient:
    """`dns.query`'s functions, each call fired as a request."""

    def __init__(self, request_event: EventHook) -> None:
        self.request_event = request_event

    def __getattr__(self, function_name: str) -> Callable[..., Message]:
        func = getattr(dns.query, function_name)

        def wrapper(message: Message, *args: Any, name: str | None = None, **kwargs: Any) -> Message:
            meta: dict[str, Any] = {
                "request_type": "DNS",
                "name": name or function_name,
                "start_time": time.time(),
                "response_length": 0,
                "context": {},
                "exception": None,
                "response": None,
            }
            start = time.perf_counter()
            try:
                meta["response"] = func(message, *args, **kwargs)
            except DNSException as e:
                meta["exception"] = e
            else:
                if not meta["response"].answer:
                    meta["exception"] = LocustError("No answer in DNS response")
            meta["response_time"] = (time.perf_counter() - start) * 1000
            self.request_event.fire(**meta)
            return meta["response"]  # type: ignore[no-any-return]  # None after a DNSException, as Locust's

        return wrapper


class DNSUser(User):
    """A User whose `self.client` is a DNSClient: `self.client.udp(dns.message.make_query(...), "1.2.3.4")`."""

    abstract = True

    def __init__(self, environment: Environment) -> None:
        super().__init__(environment)
        self.client = DNSClient(environment.events.request)

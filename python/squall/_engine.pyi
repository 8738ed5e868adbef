"""Type stub for the native engine module (crates/squall-py). Configurations go in as dicts that the
engine deserializes into its own types (an unknown or mistyped key is a UsageError); results come out
as the result document's dict, the structure `--json` writes."""

from typing import Any, final

from typing_extensions import disjoint_base

__all__ = [
    "LONGEST_WAIT_S",
    "PERCENTILES",
    "CallBase",
    "Completion",
    "DemoTarget",
    "MergedHistogram",
    "Message",
    "NativePlan",
    "Prepared",
    "Progress",
    "Response",
    "Run",
    "RunningHistogram",
    "ScriptEngine",
    "StreamCut",
    "TargetError",
    "UsageError",
    "__version__",
    "encoded_params",
    "histogram_percentiles",
    "joined_url",
    "json_dumps",
    "long_digit_run",
    "merge_histograms",
    "merge_results",
    "running_histogram",
    "start_demo_broker",
    "use_response_class",
]

__version__: str
LONGEST_WAIT_S: float
"""The longest wait a native user's plan is given (seconds): longer ones (and NaN) are this long."""
PERCENTILES: list[float]

class UsageError(ValueError):
    """The configuration or URL is invalid."""

class TargetError(RuntimeError):
    """The target cannot be reached (name resolution, connection, TLS)."""

class StreamCut(RuntimeError):
    """A streamed response's body ended otherwise than its framing says (its message: why)."""

@final
class Progress:
    """Live numbers of a run."""

    elapsed: float
    completed: int
    failed: int
    users: int
    finished: bool
    phase: str
    """`running`, or MQTT's phase: connecting, running, draining, closed."""
    connected: int
    sent: int
    published: int
    mqtt_failed: int
    delivered: int

@final
class Run:
    """A run of `squall bench` or `squall mqtt` on the engine's threads; it starts when made and runs
    without holding the GIL."""

    @staticmethod
    def bench(config: dict[str, Any], body: bytes) -> Run: ...
    @staticmethod
    def mqtt(config: dict[str, Any]) -> Run: ...
    def progress(self) -> Progress: ...
    def stop(self) -> None:
        """End the run early; the result keeps what was measured."""
    def wait(self, timeout: float) -> bool:
        """Wait up to `timeout` seconds; True once the run has finished."""
    def live(self, cursor: int, timeout: float, histograms: bool = False) -> dict[str, Any]:
        """The live stream and totals: `{cursor, timeseries, totals}`; `timeseries` holds the seconds
        published from `cursor` on (waiting up to `timeout` for one), shaped as the result's, and
        `totals` the aggregate, endpoints and errors so far (since the last `reset_totals`). With
        `histograms`, each second's and total's serialized histogram too (a distributed worker's)."""
    def reset_totals(self) -> None: ...
    def result(self) -> dict[str, Any]:
        """The result document; waits for the end of the run. Once only."""

@final
class Prepared:
    """One request as a script makes it, converted and checked once (UsageError for a CR or LF in the
    method or a header, or a cookie that cannot be sent), sent as often as the script makes it again.
    `max_redirects` None: redirects are not followed; `record` False: the script judges it;
    `insecure`: no certificate check."""

    def __new__(
        cls,
        method: str,
        url: str,
        *,
        base: str,
        name: str | None,
        headers: list[tuple[str, str]],
        body: bytes,
        timeout: float,
        record: bool,
        max_redirects: int | None,
        insecure: bool,
        cookies: list[tuple[str, str]] = ...,
    ) -> Prepared: ...

@final
class CallBase:
    """What every call of a session shares while its settings hold: its base URL, its headers
    (UsageError for a CR or LF in one), its timeout in seconds, the redirects it follows, and whether
    certificates go unchecked."""

    def __new__(
        cls, base: str, headers: list[tuple[str, str]], timeout: float, max_redirects: int, insecure: bool
    ) -> CallBase: ...
    def prepare(
        self,
        method: str,
        url: str,
        name: str | None,
        record: bool,
        follow: bool,
        body: bytes | None = None,
        headers: dict[str, str | None] | list[tuple[str, str | None]] | None = None,
        content_type: str | None = None,
        timeout: float | None = None,
    ) -> Prepared:
        """The call as a Prepared, for `ScriptEngine.send` (or a native plan). `url` whole or joined to the
        base as text (as Locust joins them); `name` None: the path and query; `record` False: the script
        judges it; `follow`: redirects are followed; `headers`: the call's own, merged with the session's
        (a None value removes one); `content_type`: the body's, after the headers; `timeout` None: the
        session's."""

@final
class NativePlan:
    """A native user's plan: its weighted task list, each task the requests it makes in order, and its
    wait, exactly one of `constant` (seconds), `between` ((low, high) seconds), `pacing` (seconds a
    task) or `poisson` (tasks a second). UsageError for an empty task, a request with `record` False,
    or not one wait."""

    def __new__(
        cls,
        tasks: list[list[Prepared]],
        *,
        constant: float | None = None,
        between: tuple[float, float] | None = None,
        pacing: float | None = None,
        poisson: float | None = None,
    ) -> NativePlan: ...

@final
class Completion:
    """What came back for a scripted MQTT or WebSocket operation (a request's is a Response)."""

    id: int
    elapsed_us: int
    error: str | None
    """Why it failed; None when it succeeded."""
    content: bytes
    """A WebSocket exchange's or receive's message (else empty)."""
    binary: bool
    status: int
    """A WebSocket operation's: the message's opcode (1 text, 2 binary, 8 the server's close frame), or
    for a refused handshake its HTTP status."""
    kind: str | None
    """A failed WebSocket operation's kind ("timeout", "closed", "http", "connect_refused" ...)."""

@disjoint_base
class Response:
    """A scripted request's response, made by `ScriptEngine.poll` (as an instance of the class
    `use_response_class` set): its headers are parsed when read."""

    def __new__(cls) -> Response: ...
    @property
    def id(self) -> int: ...
    status_code: int
    """0 when no response arrived (then `error` says why)."""
    url: str
    """The final URL, after redirects."""
    content: bytes
    elapsed_us: int
    error: str | Exception | None
    """Why no response came (the engine's words); FastHttpSession sets a failed status's
    (LocustBadStatusCode)."""
    encoding: str | None
    """requests' `encoding`: what the script set, else what the headers say (the Content-Type's charset,
    ISO-8859-1 for text, UTF-8 for JSON), else None."""
    @property
    def name(self) -> str:
        """The stats name."""
    @property
    def requested_url(self) -> str:
        """The URL the request was made to, before any redirect (what Locust's request event calls its url)."""
    @property
    def cookies(self) -> dict[str, str]:
        """The cookies it set (name -> value), from each Set-Cookie header."""
    @property
    def text(self) -> str:
        """The body decoded with `encoding` (bad bytes replaced), as UTF-8 when there is none or Python
        knows no such codec."""
    @property
    def ok(self) -> bool:
        """A response came, and its status is below 400."""
    @property
    def request_method(self) -> str: ...
    @property
    def streamed(self) -> bool:
        """Its body is streamed: read from `ScriptEngine.stream_take` under its id, not in `content`."""
    def header_pairs(self) -> list[tuple[str, str]]:
        """Each header as (lower-case name, value), in order, repeated ones apart."""
    def sent(self) -> tuple[list[tuple[str, str]], bytes]:
        """The request's headers and body as sent."""
    def take_history(self) -> list[Response]:
        """A response for each redirect followed, first first; made once (then an empty list)."""

def joined_url(base: str, url: str) -> str:
    """A call's URL on its session's base, as Locust joins them: as text; a whole URL (http:// or
    https://, any case) as it is. The engine's one join, which every request's shape gets too."""

def json_dumps(obj: Any) -> bytes | None:
    """json.dumps(obj).encode() for plain data (exact dicts with text keys, lists, tuples, text, ints,
    floats, bools, None; 64 deep at most); None for anything else."""

def long_digit_run(data: bytes) -> bool:
    """Whether `data` holds a run of 19 or more ASCII digits (an integer a JSON body may hold past 64 bits)."""

def encoded_params(params: object) -> str | None:
    """requests' query string of `params` (a dict, or a list or tuple of pairs; list or tuple values a pair
    each; None values dropped; text, bytes, int, float and bool values), as urlencode(doseq=True) writes
    it; None for anything else (squall.clients._encode_params then encodes it)."""

def use_response_class(
    cls: type[Response],
    caught: type[Response] | None = None,
    streamed: type[Response] | None = None,
    streamed_caught: type[Response] | None = None,
) -> None:
    """Makes `ScriptEngine.poll`'s responses instances of `cls` (made with no arguments), and those of
    requests the script judges (`record` False) instances of `caught` (`cls` if not given); a streamed
    request's of `streamed` and `streamed_caught` (`cls` and `caught` if not given)."""

@final
class Message:
    """An MQTT message that arrived on a scripted user's subscription."""

    user: int
    topic: str
    payload: bytes
    qos: int

@final
class ScriptEngine:
    """The engine of scripted users, on the script's own thread."""

    def __new__(cls, insecure: bool = False, http2: bool = False) -> ScriptEngine: ...
    def send(self, user: int, prepared: Prepared) -> int:
        """Starts `user`'s request of `prepared`; returns its id (UsageError for a URL that cannot be
        requested)."""
    def call(
        self,
        user: int,
        base: CallBase,
        method: str,
        url: str,
        name: str | None,
        record: bool,
        follow: bool,
        body: bytes | None = None,
        headers: dict[str, str | None] | list[tuple[str, str | None]] | None = None,
        content_type: str | None = None,
        timeout: float | None = None,
    ) -> int:
        """`base.prepare(method, url, ...)` then `send`, in one crossing; returns the request's id."""
    def send_stream(self, user: int, prepared: Prepared, read_timeout: float) -> int:
        """Starts `user`'s streamed request (`stream=True`): its Response comes at its head (`streamed`
        true), its body from `stream_take` under the same id, each wait for more bounded by
        `read_timeout` seconds."""
    def stream_take(self, stream: int, max: int | None = None) -> bytes | None:
        """Up to `max` bytes of the body that came (None: all): b"" at its end, None while nothing has
        come (then `stream_wait`); StreamCut once a body cut short has given all it had."""
    def stream_wait(self, stream: int) -> int:
        """An operation whose Completion comes when the stream has more bytes or has ended."""
    def stream_close(self, stream: int) -> None:
        """Done with the stream: its connection goes back to the pool if its body ended whole, else closes."""
    def poll(
        self,
        timeout: float,
        verdicts: list[tuple[Response, str | None]] = ...,
        pending: dict[int, Any] | None = None,
        ready: Any = None,
    ) -> list[Response | Completion]:
        """Records `verdicts` (the script's judgements of responses: failure text, None for a success),
        then runs the engine until completions are ready or `timeout` seconds pass (GIL released). A
        completion whose id is in `pending` is taken from it and queued on `ready` (a deque) as
        (greenlet, completion); the others are returned."""
    def judge(self, verdicts: list[tuple[Response, str | None]]) -> None:
        """Records `verdicts` now (the last ones before `finish`)."""
    def messages(self) -> list[Message]: ...
    def mqtt_connect(
        self,
        user: int,
        broker: str,
        client_id: str,
        username: str | None,
        password: str | None,
        keepalive: int,
        clean_session: bool,
        mqtt_version: str,
        timeout: float,
        insecure: bool,
    ) -> int: ...
    def mqtt_publish(
        self, user: int, topic: str, payload: bytes, qos: int, retain: bool, name: str | None = None
    ) -> int:
        """`name`: the publish's name in the statistics (a client's own `_generate_event_name`), if not
        Locust's `publish:QOS:TOPIC`."""
    def mqtt_subscribe(self, user: int, filter: str, qos: int, name: str | None = None) -> int:
        """`name`: as for `mqtt_publish` (Locust's: `subscribe:QOS:FILTER`)."""
    def mqtt_disconnect(self, user: int) -> int: ...
    def ws_connect(
        self, user: int, url: str, headers: list[tuple[str, str]], name: str | None = None, timeout: float = 30.0
    ) -> int: ...
    def ws_send(self, user: int, payload: bytes, binary: bool, name: str | None = None) -> int: ...
    def ws_exchange(
        self, user: int, payload: bytes, binary: bool, name: str | None = None, timeout: float = 30.0
    ) -> int: ...
    def ws_receive(self, user: int, name: str | None = None, timeout: float = 30.0) -> int: ...
    def ws_close(self, user: int) -> int: ...
    # websocket-client's connections (squall.contrib.websocket_client): any number a user, each operation
    # run beside the others on its connection, nothing recorded.
    def ws_client_connect(
        self, owner: int | None, url: str, headers: list[tuple[str, str]], timeout: float | None = None
    ) -> tuple[int, int]:
        """(the connection's id, the connect's id); `owner`: the user whose stop closes it."""
    def ws_client_send(self, socket: int, payload: bytes, binary: bool) -> int: ...
    def ws_client_control(self, socket: int, ping: bool, payload: bytes) -> int: ...
    def ws_client_recv(self, socket: int, timeout: float | None = None) -> int: ...
    def ws_client_close(self, socket: int, code: int, reason: bytes, wait: float) -> int: ...
    def ws_client_cancel(self, socket: int, op: int) -> None: ...
    def ws_client_forget(self, socket: int) -> None: ...
    def record(
        self, method: str, name: str, elapsed_us: int, status: int, body_bytes: int, failure: str | None = None
    ) -> None:
        """A verdict on a request the script names itself (its own request event)."""
    def close_user(self, user: int) -> None:
        """The user stopped: closes its connections and cancels its requests in flight, unmeasured."""
    def cookies(self, user: int) -> list[tuple[str, str, str]]:
        """(name, value, domain) of the user's cookies."""
    def set_cookie(self, user: int, name: str, value: str, domain: str = "") -> None: ...
    def remove_cookies(self, user: int, name: str | None = None) -> None: ...
    def set_rate(self, rate: float, arrival: str = "constant", duration: float | None = None) -> None:
        """Open model: task iterations arrive at `rate` a second from now on (0 pauses them); with
        `duration`, none arrives after that many seconds from now."""
    def arrivals(self) -> list[float]:
        """Open model: intended times (seconds since the start) of the arrivals that fell due."""
    def begin_iteration(self, user: int, intended: float) -> None:
        """Open model: `user` starts the iteration of the arrival due at `intended`."""
    def run_plan(self, user: int, plan: NativePlan) -> int:
        """Runs `user`'s tasks in the engine; returns the plan's id, whose completion comes when the plan
        ends (`end_plans`). UsageError for a URL that cannot be requested, nothing sent."""
    def end_plans(self) -> None:
        """Ends every native plan at its next wait (at once for a user waiting now)."""
    def set_users(self, users: int) -> None: ...
    def counts(self) -> tuple[int, int]:
        """(completed, failed) so far."""
    def publish_now(self) -> None:
        """Publishes what the users recorded now, the second in progress included (the users are done)."""
    def live(self, cursor: int, histograms: bool = False) -> dict[str, Any]:
        """The live stream and totals (see `Run.live`); never waits."""
    def reset_totals(self) -> int:
        """Resets the live totals and the run's own (Locust's reset): empty now, counting from the start of
        the next second, which it returns."""
    def finish(self, reason: str, url: str) -> dict[str, Any]:
        """Ends the run; returns the result document."""

def start_demo_broker(port: int = 0) -> int:
    """Starts the demo's embedded MQTT broker (rumqttd) on 127.0.0.1; returns its port."""

@final
class DemoTarget:
    """The built-in demo HTTP server on 127.0.0.1."""

    port: int
    def __new__(cls, port: int = 0) -> DemoTarget: ...
    @staticmethod
    def endpoints() -> list[tuple[str, str]]: ...
    def stop(self) -> None: ...

def merge_results(docs: list[str]) -> dict[str, Any]:
    """Merges the result documents (JSON text) of several runs into one, losslessly (histograms added)."""

@final
class MergedHistogram:
    """Serialized histograms added into one (`merge_histograms`), with its statistics."""

    histogram: str
    count: int
    min_us: int
    max_us: int
    mean_us: float
    stdev_us: float
    percentiles_us: dict[str, int]
    spectrum: list[tuple[float, int]]
    buckets: list[tuple[int, int]]

def merge_histograms(histograms: list[str]) -> MergedHistogram:
    """Adds serialized histograms (empty strings skipped); UsageError for one that does not decode."""

@final
class RunningHistogram:
    """What a series of serialized histograms add up to after each (`running_histogram`): the median
    and the mean of the sum so far (µs; 0 while it is empty), unclamped, and how many values it holds."""

    counts: list[int]
    medians_us: list[int]
    means_us: list[float]

def running_histogram(histograms: list[str]) -> RunningHistogram:
    """The running sum of serialized histograms, in order (empty strings add nothing); UsageError for
    one that does not decode."""

def histogram_percentiles(histogram: str, percentiles: list[float]) -> list[int]:
    """Exact values (µs) of a result's serialized histogram at the given percentiles (0 to 100)."""

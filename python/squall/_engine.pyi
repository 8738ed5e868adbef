"""Type stub for the native engine module (crates/squall-py). The classes are built by `__new__` and
cannot be subclassed, as PyO3 makes them; the *Tuple aliases exist only here, for the type checker."""

from typing import final

__all__ = [
    "PERCENTILES",
    "BenchRun",
    "DemoTarget",
    "MqttRun",
    "ScriptSession",
    "TargetError",
    "UsageError",
    "__version__",
    "merge_results_json",
    "start_demo_broker",
]

__version__: str
PERCENTILES: list[float]

class UsageError(ValueError):
    """The configuration or URL is invalid."""

class TargetError(RuntimeError):
    """The target cannot be reached (name resolution, connection, TLS)."""

@final
class BenchRun:
    """A running load; it starts at construction and runs without holding the GIL."""

    def __new__(cls, config_json: str, body: bytes) -> BenchRun: ...
    def progress(self) -> tuple[float, int, int, bool]:
        """(elapsed seconds, completed requests, failed requests, finished)."""
    def stop(self) -> None:
        """End the run early; the result keeps what was measured."""
    def wait(self, timeout: float) -> bool:
        """Wait up to `timeout` seconds; True once the run has finished."""
    def result_json(self) -> str:
        """The result document as JSON; waits for the end of the run. Once only."""

@final
class MqttRun:
    """A running `squall mqtt` load; starts at construction, after one preflight connection."""

    def __new__(cls, config_json: str) -> MqttRun: ...
    def progress(self) -> tuple[float, str, int, int, int, int, int, bool]:
        """(elapsed seconds, phase, connected, sent, published, failed, delivered, finished)."""
    def stop(self) -> None: ...
    def wait(self, timeout: float) -> bool: ...
    def result_json(self) -> str: ...

def start_demo_broker(port: int = 0) -> int:
    """Starts the demo's embedded MQTT broker (rumqttd) on 127.0.0.1; returns its port."""

@final
class DemoTarget:
    """The built-in demo HTTP server on 127.0.0.1."""

    @property
    def port(self) -> int: ...
    def __new__(cls, port: int = 0) -> DemoTarget: ...
    @staticmethod
    def endpoints() -> list[tuple[str, str]]: ...
    def stop(self) -> None: ...

# (id, user, method, url, headers, body, timeout seconds, stats name, engine records it, follow redirects)
RequestTuple = tuple[int, int, str, str, list[tuple[str, str]], bytes, float, str, bool, bool]
# (id, status or 0, raw header lines, Set-Cookie values, body, elapsed µs, error or None, final URL if redirected)
CompletionTuple = tuple[int, int, bytes, list[str], bytes, int, str | None, str | None]

# (user, id, operation: connect|publish|subscribe|disconnect, broker URL or topic, payload, qos, retain,
#  connect options JSON)
MqttOpTuple = tuple[int, int, str, str, bytes, int, bool, str]

@final
class ScriptSession:
    """The engine side of scripted users: requests go in, completions come back in batches."""

    def __new__(cls, insecure: bool = False) -> ScriptSession: ...
    def submit(self, batch: list[RequestTuple]) -> None: ...
    def poll(self, timeout: float) -> list[CompletionTuple]:
        """Completions so far, waiting up to `timeout` seconds for the first (GIL released)."""
    def submit_mqtt(self, batch: list[MqttOpTuple]) -> None:
        """MQTT operations, each run on its user's connection in order; completions come from poll()."""
    def messages(self) -> list[tuple[int, str, bytes, int]]:
        """(user, topic, payload, qos) of messages that arrived on users' subscriptions."""
    def record(
        self, method: str, name: str, elapsed_us: int, status: int, body_bytes: int, failure: str | None = None
    ) -> None:
        """A verdict the script reached itself (catch_response)."""
    def close_user(self, user: int) -> None:
        """The user stopped: closes its connections and cancels its requests in flight, unmeasured."""
    def counts(self) -> tuple[int, int]:
        """(completed, failed) so far."""
    def snapshot_json(self) -> str:
        """Live totals per endpoint, then the aggregate, as JSON."""
    def finish(self, reason: str, url: str, users: list[int]) -> str:
        """Ends the session; the result document as JSON. `users[t]` is the user count at second t."""

def merge_results_json(docs: list[str]) -> str:
    """Merges result documents of several runs into one, losslessly (histograms added)."""

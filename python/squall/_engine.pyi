"""Type stub for the native engine module (crates/squall-py)."""

__version__: str
PERCENTILES: list[float]

class UsageError(ValueError):
    """The configuration or URL is invalid."""

class TargetError(RuntimeError):
    """The target cannot be reached (name resolution, connection, TLS)."""

class BenchRun:
    """A running load; it starts at construction and runs without holding the GIL."""

    def __init__(self, config_json: str, body: bytes) -> None: ...
    def progress(self) -> tuple[float, int, int, bool]:
        """(elapsed seconds, completed requests, failed requests, finished)."""
    def stop(self) -> None:
        """End the run early; the result keeps what was measured."""
    def wait(self, timeout: float) -> bool:
        """Wait up to `timeout` seconds; True once the run has finished."""
    def result_json(self) -> str:
        """The result document as JSON; waits for the end of the run. Once only."""

class DemoTarget:
    """The built-in demo HTTP server on 127.0.0.1."""

    port: int
    def __init__(self, port: int = 0) -> None: ...
    @staticmethod
    def endpoints() -> list[tuple[str, str]]: ...
    def stop(self) -> None: ...

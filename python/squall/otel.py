"""`--otel` (Locust 2.42's): the run's metrics, and its log, exported over OpenTelemetry (OTLP), by the
OpenTelemetry SDK (`pip install 'squall[otel]'`; without it --otel is one line and exit 2).

What is exported is what Locust exports, under its names, so that a collector's pipeline and dashboards
made for Locust read squall's run unchanged:
- `locust.client.duration`: a histogram of each request's time (s), with the request's `name` (the first
  20 names; later ones as "Too many unique request names") and, for a failure, `error.type` (its
  exception's class: HTTPError, CatchResponseError, ...). Its count per name is the requests, and per
  `error.type` the failures. Recorded from the `request` event, as Locust's listener does.
- `locust.users.count`: a gauge of the running users by `user_class`.
- the log (`locust.*` and the locustfile's), unless `OTEL_LOGS_EXPORTER=none`.
Not exported: traces. Locust's come from instrumenting requests and urllib3, which squall's engine does
not use.

Configured by OpenTelemetry's variables, as in Locust: `OTEL_EXPORTER_OTLP_ENDPOINT` (and the
per-signal ones), `OTEL_METRIC_EXPORT_INTERVAL` (60 s by default), `OTEL_SERVICE_NAME` (default
"locust"), `OTEL_METRICS_EXPORTER` / `OTEL_LOGS_EXPORTER` (`otlp`, `console` or `none`). The protocol is
OTLP over HTTP (`http/protobuf`) unless `OTEL_EXPORTER_OTLP_PROTOCOL` says `grpc` (which needs
opentelemetry-exporter-otlp-proto-grpc; Locust's default is grpc). With `--processes`, each process
exports its own users and requests, told apart by the resource's `squall.worker`. Everything is exported
once more when the run ends (the SDK flushes on shutdown)."""

from __future__ import annotations

import logging
import os
import socket
from typing import TYPE_CHECKING, Any

from squall import __version__
from squall.errors import UsageError
from squall.event import events

if TYPE_CHECKING:
    import argparse

MAX_REQUEST_NAMES = 20  # Locust's cap on the `name` attribute's values
PACKAGES = "the OpenTelemetry SDK and its OTLP exporter: pip install 'squall[otel]'"
logger = logging.getLogger("locust.opentelemetry")


def _exporters(signal: str) -> set[str]:
    value = os.getenv(f"OTEL_{signal}_EXPORTER", "otlp")
    return {e.strip().lower() for e in value.split(",") if e.strip()} - {"none"}


def _protocol(signal: str) -> str:
    default = os.getenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
    protocol = os.getenv(f"OTEL_EXPORTER_OTLP_{signal}_PROTOCOL", default).strip().lower()
    if protocol not in ("grpc", "http/protobuf", "http"):
        raise UsageError(f"--otel: unknown OTLP protocol '{protocol}' (grpc or http/protobuf)")
    return protocol


def setup(args: argparse.Namespace, worker: tuple[int, int] | None = None) -> bool:
    """Starts exporting (see the module's doc); False when every exporter is `none`. UsageError when the
    SDK, or the exporter asked for, is not installed."""
    metric_exporters, log_exporters = _exporters("METRICS"), _exporters("LOGS")
    if not metric_exporters and not log_exporters:
        logger.info("No OpenTelemetry exporters configured, opentelemetry not enabled")
        return False
    try:
        # The SDK only with --otel, for start-up (and it is an optional dependency).
        from opentelemetry import metrics
        from opentelemetry.sdk.resources import Resource
    except ImportError:
        raise UsageError(f"--otel needs {PACKAGES}") from None
    attributes: dict[str, Any] = {
        "service.name": os.getenv("OTEL_SERVICE_NAME", "locust"),
        "service.version": __version__,
        "host.name": socket.gethostname(),
        "filename": getattr(args, "locustfile", "") or "",
        "profile": getattr(args, "profile", None) or "",
    }
    if worker is not None:
        attributes["squall.worker"] = worker[0]
    resource = Resource.create(attributes)
    if metric_exporters:
        provider = _meter_provider(resource, metric_exporters)
        metrics.set_meter_provider(provider)
        _record(provider.get_meter("locust"))
        events.quit.add_listener(lambda **_kw: provider.shutdown())  # the last export, at the end
    if log_exporters:
        _log_handler(resource, log_exporters)
    return True


def _meter_provider(resource: Any, exporters: set[str]) -> Any:
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import ConsoleMetricExporter, PeriodicExportingMetricReader

    readers = []
    for name in exporters:
        if name == "otlp":
            if _protocol("METRICS") == "grpc":
                try:
                    from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter
                except ImportError:
                    raise UsageError(
                        "--otel with OTLP over gRPC needs opentelemetry-exporter-otlp-proto-grpc "
                        "(or OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf)"
                    ) from None
            else:
                try:
                    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
                except ImportError:
                    raise UsageError(f"--otel needs {PACKAGES}") from None
            readers.append(PeriodicExportingMetricReader(OTLPMetricExporter()))
        elif name == "console":
            readers.append(PeriodicExportingMetricReader(ConsoleMetricExporter()))
        else:
            raise UsageError(f"--otel: unknown metrics exporter '{name}' (otlp, console or none)")
    return MeterProvider(resource=resource, metric_readers=readers)


def _record(meter: Any) -> None:
    """Locust's two instruments, fed by the run: the request event and the runner's users."""
    from opentelemetry.metrics import Observation

    duration = meter.create_histogram("locust.client.duration", unit="s", description="Time to last byte for requests")
    names: set[str] = set()

    def on_request(name: str, response_time: float | None, exception: BaseException | None, **_kw: Any) -> None:
        if name in names or len(names) < MAX_REQUEST_NAMES:
            names.add(name)
            attributes = {"name": name}
        else:
            attributes = {"name": "Too many unique request names"}
        if exception:
            attributes["error.type"] = type(exception).__name__
        if response_time is not None:
            duration.record(response_time / 1000.0, attributes=attributes)

    events.request.add_listener(on_request)

    def on_init(runner: Any = None, environment: Any = None, **_kw: Any) -> None:
        if runner is None:
            return

        def observe(_options: Any) -> Any:
            # Called in the SDK's export thread: list() copies the running users in one step (it holds
            # the interpreter), where iterating them could see the run change them.
            counts = {c.__name__: 0 for c in runner.environment.user_classes}
            for user in list(runner.users):
                counts[type(user).__name__] = counts.get(type(user).__name__, 0) + 1
            for user_class, count in counts.items():
                yield Observation(count, {"user_class": user_class})

        meter.create_observable_gauge(
            "locust.users.count",
            callbacks=[observe],
            unit="{user}",
            description="Number of currently running Locust users",
        )

    events.init.add_listener(on_init)


def _log_handler(resource: Any, exporters: set[str]) -> None:
    """The log to OpenTelemetry: a handler on the root logger and on `locust` (whose loggers do not
    propagate), as Locust's."""
    from opentelemetry import _logs
    from opentelemetry.sdk._logs import LoggerProvider, LoggingHandler
    from opentelemetry.sdk._logs.export import (
        BatchLogRecordProcessor,
        ConsoleLogRecordExporter,
        SimpleLogRecordProcessor,
    )

    provider = LoggerProvider(resource=resource)
    for name in exporters:
        if name == "otlp":
            if _protocol("LOGS") == "grpc":
                try:
                    from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter
                except ImportError:
                    raise UsageError(
                        "--otel with OTLP over gRPC needs opentelemetry-exporter-otlp-proto-grpc "
                        "(or OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf)"
                    ) from None
            else:
                from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
            provider.add_log_record_processor(BatchLogRecordProcessor(OTLPLogExporter()))
        elif name == "console":
            provider.add_log_record_processor(SimpleLogRecordProcessor(ConsoleLogRecordExporter()))
        else:
            raise UsageError(f"--otel: unknown logs exporter '{name}' (otlp, console or none)")
    _logs.set_logger_provider(provider)
    handler = LoggingHandler(logger_provider=provider)
    handler.name = "opentelemetry"
    logging.getLogger().addHandler(handler)
    logging.getLogger("locust").addHandler(handler)
    events.quit.add_listener(lambda **_kw: provider.shutdown())

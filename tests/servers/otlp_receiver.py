"""An OpenTelemetry OTLP/HTTP receiver, as a Collector's `otlp` receiver takes it: usage
`otlp_receiver.py PORT`. It decodes what exporters POST (protobuf, gzip or not) to /v1/metrics,
/v1/logs and /v1/traces, and keeps it (until POST /__reset); GET /__seen answers it as JSON:

  {"metrics": [{"resource": {...}, "name", "unit", "kind": "histogram"|"gauge"|"sum",
                "points": [{"attributes": {...}, "count", "sum", "value", "time_unix_nano"}]}, ...],
   "logs": [{"resource": {...}, "body", "severity"}, ...], "spans": N}

one entry per metric per export, in the order they came."""

import gzip
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from google.protobuf.json_format import MessageToDict
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

seen = {"metrics": [], "logs": [], "spans": 0}
lock = threading.Lock()


def attributes(kvs):
    out = {}
    for kv in kvs:
        value = MessageToDict(kv.value)
        out[kv.key] = next(iter(value.values())) if value else None
    return out


def metrics(request):
    for rm in request.resource_metrics:
        resource = attributes(rm.resource.attributes)
        for sm in rm.scope_metrics:
            for m in sm.metrics:
                kind = m.WhichOneof("data")
                points = []
                for p in getattr(m, kind).data_points:
                    point = {"attributes": attributes(p.attributes), "time_unix_nano": p.time_unix_nano}
                    if kind == "histogram":
                        point.update(count=p.count, sum=p.sum)
                    else:
                        point["value"] = p.as_int if p.WhichOneof("value") == "as_int" else p.as_double
                    points.append(point)
                yield {"resource": resource, "name": m.name, "unit": m.unit, "kind": kind, "points": points}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _answer(self, status, body, kind="application/x-protobuf"):
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path == "/__reset":
            with lock:
                seen.update(metrics=[], logs=[], spans=0)
            return self._answer(200, b"")
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        with lock:
            if self.path == "/v1/metrics":
                seen["metrics"].extend(metrics(ExportMetricsServiceRequest.FromString(body)))
            elif self.path == "/v1/logs":
                for rl in ExportLogsServiceRequest.FromString(body).resource_logs:
                    resource = attributes(rl.resource.attributes)
                    for sl in rl.scope_logs:
                        for r in sl.log_records:
                            seen["logs"].append(
                                {"resource": resource, "body": r.body.string_value, "severity": r.severity_text}
                            )
            elif self.path == "/v1/traces":
                request = ExportTraceServiceRequest.FromString(body)
                seen["spans"] += sum(len(ss.spans) for rs in request.resource_spans for ss in rs.scope_spans)
            else:
                return self._answer(404, b"")
        self._answer(200, b"")  # an empty Export*ServiceResponse: everything accepted

    def do_GET(self):
        if self.path != "/__seen":
            return self._answer(404, b"")
        with lock:
            self._answer(200, json.dumps(seen).encode(), "application/json")


if __name__ == "__main__":
    server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)
    server.daemon_threads = True
    print("ready", flush=True)
    server.serve_forever()

"""An OTLP/HTTP trace receiver on loopback: what a collector would get from our processes.

It accepts ``POST /v1/traces`` with the protobuf ``ExportTraceServiceRequest`` the Python
OTLP exporter sends (gzip or not), decodes it with ``opentelemetry-proto`` and keeps every span
as a plain ``ReceivedSpan``. Point ``OTEL_EXPORTER_OTLP_ENDPOINT`` at ``endpoint``.
"""

from __future__ import annotations

import gzip
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue


@dataclass(frozen=True)
class ReceivedSpan:
    """One span as the collector got it: ids in hex, attributes as Python values."""

    name: str
    trace_id: str
    span_id: str
    parent_span_id: str | None
    attributes: dict[str, Any]
    start_ns: int
    end_ns: int
    service: str | None
    status_code: int

    def __getitem__(self, key: str) -> Any:
        return self.attributes[key]


def _value(value: AnyValue) -> Any:
    match value.WhichOneof("value"):
        case "string_value":
            return value.string_value
        case "bool_value":
            return value.bool_value
        case "int_value":
            return value.int_value
        case "double_value":
            return value.double_value
        case "array_value":
            return tuple(_value(v) for v in value.array_value.values)
        case "bytes_value":
            return value.bytes_value
        case _:
            return None


def decode(body: bytes) -> list[ReceivedSpan]:
    """The spans of one ``ExportTraceServiceRequest``."""
    request = ExportTraceServiceRequest()
    request.ParseFromString(body)
    spans = []
    for resource_spans in request.resource_spans:
        resource = {a.key: _value(a.value) for a in resource_spans.resource.attributes}
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                spans.append(
                    ReceivedSpan(
                        name=span.name,
                        trace_id=span.trace_id.hex(),
                        span_id=span.span_id.hex(),
                        parent_span_id=span.parent_span_id.hex() or None,
                        attributes={a.key: _value(a.value) for a in span.attributes},
                        start_ns=span.start_time_unix_nano,
                        end_ns=span.end_time_unix_nano,
                        service=resource.get("service.name"),
                        status_code=span.status.code,
                    )
                )
    return spans


def only(spans: list[ReceivedSpan], name: str) -> ReceivedSpan:
    """The one span named ``name`` (fails when there is none, or more)."""
    found = [s for s in spans if s.name == name]
    assert len(found) == 1, f"{len(found)} spans {name!r} among {sorted(s.name for s in spans)}"
    return found[0]


class OtlpReceiver:
    """Collects the spans posted to it; use as a context manager."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self._lock = threading.Lock()
        self._spans: list[ReceivedSpan] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                if self.path != "/v1/traces":
                    self.send_error(404)
                    return
                received = decode(body)
                with receiver._lock:
                    receiver._spans.extend(received)
                reply = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

        self._server = ThreadingHTTPServer((host, port), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def env(self, service: str | None = None, **more: str) -> dict[str, str]:
        """The variables that make a process send its spans here, soon after they end (a short
        batch delay, so the spans of a process that is then killed arrive too)."""
        found = {"OTEL_EXPORTER_OTLP_ENDPOINT": self.endpoint, "OTEL_BSP_SCHEDULE_DELAY": "50"}
        if service is not None:
            found["OTEL_SERVICE_NAME"] = service
        return found | more

    @property
    def spans(self) -> list[ReceivedSpan]:
        with self._lock:
            return list(self._spans)

    def named(self, prefix: str) -> list[ReceivedSpan]:
        """The spans whose name starts with ``prefix``."""
        return [s for s in self.spans if s.name.startswith(prefix)]

    def wait_for(
        self, condition: Callable[[list[ReceivedSpan]], bool], what: str, timeout: float = 30
    ) -> list[ReceivedSpan]:
        """Wait until ``condition`` holds of the spans received; they are returned."""
        deadline = time.monotonic() + timeout
        while not condition(spans := self.spans):
            if time.monotonic() > deadline:
                names = sorted(s.name for s in spans)
                raise AssertionError(f"timed out waiting for {what}; received {names}")
            time.sleep(0.02)
        return spans

    def start(self) -> Self:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

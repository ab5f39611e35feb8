"""The OpenTelemetry side of ``agentworld.tracing``: imported only when a collector is configured.

The SDK's tracer provider with a ``BatchSpanProcessor`` and the OTLP/HTTP protobuf exporter,
both configured by the standard ``OTEL_*`` variables; the provider is shut down (its spans
flushed) when the process exits. Attribute names are the GenAI semantic conventions';
ours start with ``agentworld.``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import Span, SpanKind
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from agentworld.process_secrets import redact_process_text
from agentworld.redaction import redact
from agentworld.tracing import CAPTURE_VARIABLE, Attributes

if TYPE_CHECKING:
    from agentworld.models.llm import LLMResponse
    from agentworld.models.work import WorkItem

_PROPAGATOR = TraceContextTextMapPropagator()
_AGENT_WORK = ("turn", "loop", "resume")
_PROVIDER_NAMES = {"google": "gcp.gemini"}
"""Our provider names that the GenAI conventions spell otherwise."""


class Tracing:
    """This process's tracer, and the spans the runtime makes with it."""

    def __init__(self, provider: TracerProvider) -> None:
        self.provider = provider
        self.tracer = provider.get_tracer("agentworld")
        self.capture = os.environ.get(CAPTURE_VARIABLE, "").strip().lower() == "true"

    @classmethod
    def start(cls, service_name: str) -> Tracing:
        named = os.environ.get("OTEL_SERVICE_NAME") or "service.name=" in os.environ.get(
            "OTEL_RESOURCE_ATTRIBUTES", ""
        )
        resource = Resource.create({} if named else {SERVICE_NAME: service_name})
        provider = TracerProvider(resource=resource, shutdown_on_exit=True)  # flushed at exit
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        trace.set_tracer_provider(provider)
        return cls(provider)

    def flush(self) -> None:
        self.provider.force_flush()

    # -- context -----------------------------------------------------------------

    def traceparent(self) -> str | None:
        carrier: dict[str, str] = {}
        _PROPAGATOR.inject(carrier)
        return carrier.get("traceparent")

    def trace_id(self) -> str | None:
        found = trace.get_current_span().get_span_context()
        return format(found.trace_id, "032x") if found.is_valid else None

    @staticmethod
    def _parent(traceparent: str | None) -> otel_context.Context:
        """The stored context, or a fresh one (a new trace) when there is none."""
        if not traceparent:
            return otel_context.Context()
        return _PROPAGATOR.extract({"traceparent": traceparent}, context=otel_context.Context())

    @contextmanager
    def _under(self, parent: otel_context.Context) -> Iterator[None]:
        token = otel_context.attach(parent)
        try:
            yield
        finally:
            otel_context.detach(token)

    # -- spans ---------------------------------------------------------------------

    @contextmanager
    def span(self, name: str, attributes: Attributes | None) -> Iterator[Span]:
        with self.tracer.start_as_current_span(name, attributes=attributes) as found:
            yield found

    @contextmanager
    def work_span(self, work: WorkItem, chat_id: str) -> Iterator[Span | None]:
        with self._under(self._parent(work.traceparent)):
            agent = getattr(work, "agent", None)
            if work.kind not in _AGENT_WORK or agent is None:
                yield None
                return
            attributes = {
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": agent,
                "gen_ai.conversation.id": chat_id,
                "agentworld.work.kind": work.kind,
            }
            with self.tracer.start_as_current_span(f"invoke_agent {agent}", attributes=attributes) as found:
                yield found

    @contextmanager
    def model_span(self, provider: str, model: str, agent: str) -> Iterator[Span]:
        provider = _PROVIDER_NAMES.get(provider, provider)
        attributes = {
            "gen_ai.operation.name": "chat",
            "gen_ai.system": provider,
            "gen_ai.provider.name": provider,
            "gen_ai.request.model": model,
            "gen_ai.agent.name": agent,
        }
        with self.tracer.start_as_current_span(f"chat {model}", kind=SpanKind.CLIENT, attributes=attributes) as found:
            yield found

    def model_response(self, found: Span, response: LLMResponse, prompt: Sequence[Any]) -> None:
        finish = "tool_calls" if response.type == "tool_calls" else "stop"
        requested = getattr(found, "attributes", None) or {}
        found.set_attributes(
            {
                "gen_ai.response.model": response.model or str(requested.get("gen_ai.request.model", "")),
                "gen_ai.usage.input_tokens": response.usage.input_tokens,
                "gen_ai.usage.output_tokens": response.usage.output_tokens,
                "gen_ai.response.finish_reasons": (finish,),
            }
        )
        if self.capture:
            found.set_attribute("gen_ai.input.messages", _redacted_json([_prompt_message(m) for m in prompt]))
            found.set_attribute("gen_ai.output.messages", _redacted_json([_output_message(response, finish)]))

    @contextmanager
    def tool_span(self, tool: str, call_id: str, phase: str) -> Iterator[Span]:
        attributes = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": tool,
            "gen_ai.tool.call.id": call_id,
            "agentworld.tool.phase": phase,
        }
        with self.tracer.start_as_current_span(f"execute_tool {tool}", attributes=attributes) as found:
            yield found

    def annotate(self, found: Span, attributes: Attributes) -> None:
        found.set_attributes(attributes)

    def note(self, attributes: Attributes) -> None:
        trace.get_current_span().set_attributes(attributes)

    @contextmanager
    def waited(
        self, name: str, parent: str | None, started: datetime, ended: datetime, attributes: Attributes
    ) -> Iterator[Span]:
        found = self.tracer.start_span(
            name, context=self._parent(parent), attributes=attributes, start_time=_nanos(started)
        )
        found.end(end_time=max(_nanos(ended), _nanos(started)))
        with self._under(trace.set_span_in_context(found)):
            yield found


def _nanos(moment: datetime) -> int:
    return int(moment.timestamp() * 1_000_000_000)


def _redacted_json(value: Any) -> str:
    """Captured content as the person would be shown it: secrets masked, then this process's
    own secret values."""
    return redact_process_text(json.dumps(redact(value), ensure_ascii=False))


def _prompt_message(message: Any) -> dict[str, Any]:
    """One prompt message in the GenAI ``gen_ai.input.messages`` shape (role and parts)."""
    parts: list[dict[str, Any]] = []
    if message.role == "tool":
        parts.append({"type": "tool_call_response", "id": message.tool_call_id, "response": message.content})
    elif message.content:
        parts.append({"type": "text", "content": message.content})
    for call in message.tool_calls:
        parts.append(
            {"type": "tool_call", "id": call.id, "name": call.function.name, "arguments": call.function.arguments}
        )
    return {"role": message.role, "parts": parts}


def _output_message(response: LLMResponse, finish: str) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    if response.content:
        parts.append({"type": "text", "content": response.content})
    for call in response.tool_calls:
        parts.append(
            {"type": "tool_call", "id": call.id, "name": call.function.name, "arguments": call.function.arguments}
        )
    return {"role": "assistant", "parts": parts, "finish_reason": finish}

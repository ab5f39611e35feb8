"""OpenTelemetry traces of the agents' work, sent only where a collector is configured (SPEC O1).

With ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``) set,
``setup_tracing`` — called once by every process entry point — configures the SDK with a
batching OTLP/HTTP exporter (``tracing._otel``), flushed when the process exits. Without it
nothing of OpenTelemetry is imported: every helper here is a check of one module variable
that hands back a shared no-op context manager, so turns and start-up cost what they did.

Spans follow the GenAI semantic conventions: ``invoke_agent {agent}`` per agent turn, ``chat
{model}`` per model call, ``execute_tool {tool}`` per tool call, the time a call waited for a
person as its own span, ``storage.commit_step`` per committed step. The trace context
(a W3C ``traceparent``) travels with what the database stores — inbox work items and waiting
calls — so a turn continued by another process or worker continues its trace.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from datetime import datetime

    from agentworld.models.llm import LLMResponse
    from agentworld.models.work import WorkItem
    from agentworld.tracing._otel import Tracing

ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
CAPTURE_VARIABLE = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"

Attributes = Mapping[str, str | int | float | bool | Sequence[str]]

_active: Tracing | None = None
_wanted: str | None = None
"""The service name, once ``setup_tracing`` found an endpoint: the SDK is loaded at the first span."""
_NOTHING: AbstractContextManager[None] = nullcontext()


def configured(environ: Mapping[str, str] | None = None) -> bool:
    """Whether an OTLP endpoint for traces is configured (``OTEL_SDK_DISABLED=true`` says no)."""
    env = os.environ if environ is None else environ
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    return any(env.get(name, "").strip() for name in ENDPOINT_VARIABLES)


def setup_tracing(service_name: str = "agentworld") -> bool:
    """Trace this process when an endpoint is configured; once per process (later calls do
    nothing). Returns whether spans are exported. The SDK is loaded when the first span starts,
    so a command that runs no turn (``--help``, ``world list``) does not pay for it.
    ``OTEL_SERVICE_NAME`` and the other standard variables win over ``service_name``."""
    global _wanted
    if _active is not None or _wanted is not None:
        return True
    if not configured():
        return False
    _wanted = service_name
    return True


def enabled() -> bool:
    return _active is not None or _wanted is not None


def _started() -> Tracing | None:
    """The tracer, the SDK loaded now if it was wanted and is not yet."""
    global _active
    if _active is None and _wanted is not None:
        from agentworld.tracing._otel import Tracing

        _active = Tracing.start(_wanted)
    return _active


def flush() -> None:
    """Send the spans ended so far (a process about to be replaced or killed)."""
    if _active is not None:
        _active.flush()


def span(name: str, attributes: Attributes | None = None) -> AbstractContextManager[Any]:
    """A span, current while the block runs (a child of the current one); yields it, or None."""
    if (active := _active or _started()) is None:
        return _NOTHING
    return active.span(name, attributes)


def work_span(work: WorkItem, chat_id: str) -> AbstractContextManager[Any]:
    """The block that does one inbox item: under the trace context the item was stored with;
    an agent's turn (``turn``, ``loop``, ``resume``) is an ``invoke_agent`` span."""
    if (active := _active or _started()) is None:
        return _NOTHING
    return active.work_span(work, chat_id)


def model_span(provider: str, model: str, agent: str) -> AbstractContextManager[Any]:
    """A model call (``chat {model}``); ``model_response`` records what came back."""
    if (active := _active or _started()) is None:
        return _NOTHING
    return active.model_span(provider, model, agent)


def model_response(found: Any, response: LLMResponse, prompt: Sequence[Any] = ()) -> None:
    """The response's model, token usage and finish reason on a model span (and, when content
    capture is on, the prompt and the answer, redacted)."""
    if _active is not None and found is not None:
        _active.model_response(found, response, prompt)


def tool_span(tool: str, call_id: str, *, phase: str = "call") -> AbstractContextManager[Any]:
    """A tool call (``execute_tool {tool}``): ``phase`` is ``call`` (checked, authorized, run or
    made to wait) or ``approved`` (the run of a call a person approved)."""
    if (active := _active or _started()) is None:
        return _NOTHING
    return active.tool_span(tool, call_id, phase)


def annotate(found: Any, attributes: Attributes) -> None:
    """Add attributes to a span a helper here yielded (None: tracing is off)."""
    if _active is not None and found is not None:
        _active.annotate(found, attributes)


def note(attributes: Attributes) -> None:
    """Add attributes to the current span (nothing when tracing is off)."""
    if _active is not None:
        _active.note(attributes)


def waited(
    name: str,
    parent: str | None,
    started: datetime,
    ended: datetime,
    attributes: Attributes,
) -> AbstractContextManager[Any]:
    """A wait that began in another process (a call waiting for a person): a span from
    ``started`` to ``ended`` under ``parent`` (the stored ``traceparent``), current while the
    block runs so the work the answer queues continues the trace."""
    if (active := _active or _started()) is None:
        return _NOTHING
    return active.waited(name, parent, started, ended, attributes)


def traceparent() -> str | None:
    """The current span's W3C ``traceparent``, to store with the work that continues it."""
    return None if (active := _active or _started()) is None else active.traceparent()


def trace_id() -> str | None:
    """The current trace's id (32 hex digits), for the event stream."""
    return None if (active := _active or _started()) is None else active.trace_id()


def stamped(items: tuple[WorkItem, ...]) -> tuple[WorkItem, ...]:
    """``items`` with the current ``traceparent`` on each that has none."""
    if not items or (active := _active or _started()) is None:
        return items
    context = active.traceparent()
    if context is None:
        return items
    return tuple(i if i.traceparent else i.model_copy(update={"traceparent": context}) for i in items)

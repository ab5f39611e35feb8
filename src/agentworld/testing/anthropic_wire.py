"""Loopback HTTP server speaking the real Anthropic Messages API wire format.

The twin of :mod:`agentworld.testing.openai_wire`: point the *official*
``anthropic`` SDK at :attr:`AnthropicWireServer.base_url` and script what comes
back with the same :class:`Reply` / :class:`ToolCallSpec` values, so HTTP
framing, SSE event names, ``input_json_delta`` reassembly and typed error
mapping are all exercised for real. Stdlib only; also runs as a process::

    python -m agentworld.testing.anthropic_wire [--port N]

How a shared ``Reply`` reads here: ``prompt_tokens`` / ``completion_tokens``
become ``usage.input_tokens`` / ``output_tokens``; ``ToolCallSpec.arguments``
is the tool's ``input`` as JSON text (sent verbatim as ``partial_json``
fragments when streaming, parsed into an object otherwise). ``drop_stream_after``
counts every SSE event written, ``ping`` included, and ``drop_mode`` says how the
stream stops there (a cut socket, or a body that ends without ``message_stop``,
between events or in the middle of one). An error ``Reply`` with
``drop_stream_after`` on a streaming request starts a 200 stream and sends the
error as an in-stream ``event: error`` after that many events, as Anthropic does
when it overloads mid-answer.
"""

from __future__ import annotations

import itertools
import json
import secrets
from collections.abc import Callable, Iterator
from typing import Any

from agentworld.testing._loopback import LoopbackHandler, LoopbackServer, serve_forever_cli
from agentworld.testing._loopback import pieces as _pieces
from agentworld.testing.openai_wire import DropMode, Reply, Responder, ToolCallSpec

__all__ = [
    "AnthropicWireServer",
    "DropMode",
    "Reply",
    "Responder",
    "ToolCallSpec",
    "echo_responder",
]

ERROR_TYPES: dict[int, str] = {400: "invalid_request_error", 401: "authentication_error"}
ERROR_TYPES |= {402: "billing_error", 403: "permission_error", 404: "not_found_error"}
ERROR_TYPES |= {413: "request_too_large", 429: "rate_limit_error", 500: "api_error"}
ERROR_TYPES |= {504: "timeout_error", 529: "overloaded_error"}  # anything else: api_error

Event = tuple[str, dict[str, Any]]  # (SSE event name, data payload)


def text_of(content: Any) -> str:
    """Flatten Anthropic ``content`` (a string or a list of blocks) to plain text."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return " ".join(_block_text(b) for b in content if isinstance(b, dict))


def _block_text(block: dict[str, Any]) -> str:
    if block.get("type") == "tool_result":
        return text_of(block.get("content"))
    return str(block.get("text", "")) if block.get("type") == "text" else ""


def echo_responder(body: dict[str, Any]) -> Reply:
    """Default behaviour: answer ``echo: <last user turn>``."""
    users = [m for m in body.get("messages", []) if isinstance(m, dict) and m.get("role") == "user"]
    return Reply.text("echo: " + (text_of(users[-1].get("content")) if users else ""))


def _input_of(spec: ToolCallSpec) -> dict[str, Any]:
    value = json.loads(spec.arguments or "{}")
    if not isinstance(value, dict):
        raise ValueError(f"tool {spec.name!r}: arguments must be a JSON object")
    return value


def _usage(body: dict[str, Any], reply: Reply) -> dict[str, int]:
    """Scripted counts, else word counts of the request (system included) and the answer."""
    prompt = reply.prompt_tokens
    if prompt is None:
        texts = [text_of(body.get("system"))]
        texts += [text_of(m.get("content")) for m in body["messages"] if isinstance(m, dict)]
        prompt = sum(len(t.split()) for t in texts)
    completion = reply.completion_tokens
    if completion is None:
        texts = [reply.content or "", *(t.arguments for t in reply.tool_calls)]
        completion = sum(len(t.split()) for t in texts)
    return {"input_tokens": prompt, "output_tokens": completion}


def _message(body: dict[str, Any], content: list[dict[str, Any]], **fields: Any) -> dict[str, Any]:
    return {
        "id": "msg_" + secrets.token_hex(12),
        "type": "message",
        "role": "assistant",
        "model": body.get("model"),
        "content": content,
        "stop_reason": None,
        "stop_sequence": None,
    } | fields


def _stop_reason(reply: Reply) -> str:
    return "tool_use" if reply.tool_calls else "end_turn"


def _complete_payload(body: dict[str, Any], reply: Reply, ids: list[str]) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if reply.content:
        content.append({"type": "text", "text": reply.content})
    for cid, spec in zip(ids, reply.tool_calls, strict=True):
        content.append({"type": "tool_use", "id": cid, "name": spec.name, "input": _input_of(spec)})
    return _message(body, content, stop_reason=_stop_reason(reply), usage=_usage(body, reply))


def _block(index: int, block: dict[str, Any], deltas: list[dict[str, Any]]) -> Iterator[Event]:
    """One content block: its start, its deltas, its stop."""
    yield (
        "content_block_start",
        {"type": "content_block_start", "index": index, "content_block": block},
    )
    for delta in deltas:
        yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
    yield "content_block_stop", {"type": "content_block_stop", "index": index}


def _events(body: dict[str, Any], reply: Reply, ids: list[str]) -> Iterator[Event]:
    """The SSE events of a streamed answer, in the order and shape Anthropic sends them."""
    usage = _usage(body, reply)
    start_usage = {"input_tokens": usage["input_tokens"], "output_tokens": 1}
    yield (
        "message_start",
        {"type": "message_start", "message": _message(body, [], usage=start_usage)},
    )
    yield "ping", {"type": "ping"}
    blocks: list[tuple[dict[str, Any], list[dict[str, Any]]]] = []
    if reply.content:
        texts = _pieces(reply.content, reply.chunk_size)
        blocks.append(
            ({"type": "text", "text": ""}, [{"type": "text_delta", "text": t} for t in texts])
        )
    for cid, spec in zip(ids, reply.tool_calls, strict=True):
        # Like the real API, the first input_json_delta is empty.
        fragments = ["", *_pieces(spec.arguments, reply.chunk_size)]
        deltas = [{"type": "input_json_delta", "partial_json": f} for f in fragments]
        blocks.append(({"type": "tool_use", "id": cid, "name": spec.name, "input": {}}, deltas))
    for index, (block, deltas) in enumerate(blocks):
        yield from _block(index, block, deltas)
    stop = {"stop_reason": _stop_reason(reply), "stop_sequence": None}
    out = {"output_tokens": usage["output_tokens"]}
    yield "message_delta", {"type": "message_delta", "delta": stop, "usage": out}
    yield "message_stop", {"type": "message_stop"}


def _error_payload(status: int, message: str) -> dict[str, Any]:
    kind = ERROR_TYPES.get(status, "api_error")
    return {
        "type": "error",
        "error": {"type": kind, "message": message},
        "request_id": _request_id(),
    }


def _request_id() -> str:
    return "req_" + secrets.token_hex(12)


class _Handler(LoopbackHandler["AnthropicWireServer"]):
    def _json_headers(self, payload: Any) -> dict[str, str]:
        return {"request-id": payload.get("request_id") or _request_id()}

    def _send_error(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        self._send_json(status, _error_payload(status, message), headers)

    def do_GET(self) -> None:
        if self.path.split("?")[0].rstrip("/") == "/v1/models":
            model = {"type": "model", "id": "wire-test", "display_name": "Wire Test"}
            model["created_at"] = "2025-01-01T00:00:00Z"
            page = {"data": [model], "has_more": False, "first_id": "wire-test"}
            self._send_json(200, page | {"last_id": "wire-test"})
        else:
            self._send_error(404, f"Unknown path {self.path}")

    def do_POST(self) -> None:
        body = self._read_json()
        owner = self.owner
        if isinstance(body, dict):
            owner._record(body, {k.lower(): v for k, v in self.headers.items()})
        if self.path.split("?")[0].rstrip("/") != "/v1/messages":
            self._send_error(404, f"Unknown path {self.path}")
            return
        if not (self.headers.get("x-api-key") or self.headers.get("authorization")):
            self._send_error(401, "x-api-key header is required")
            return
        missing = [
            k
            for k in ("model", "max_tokens", "messages")
            if not isinstance(body, dict) or k not in body
        ]
        if missing:
            self._send_error(400, f"{missing[0]}: Field required")
            return
        assert isinstance(body, dict)
        stream = bool(body.get("stream"))

        def prepare(reply: Reply) -> Callable[[], None]:
            ids = owner._ids_for((t.id for t in reply.tool_calls), _fresh_tool_id)
            if stream and (reply.status == 200 or reply.drop_stream_after is not None):
                return lambda: self._stream(body, reply, ids)  # an error is sent in the stream
            if reply.status != 200:
                error = reply.error_message or "error"
                return lambda: self._send_error(reply.status, error, reply.headers)
            payload = _complete_payload(body, reply, ids)  # raises on arguments not a JSON object
            return lambda: self._send_json(200, payload, reply.headers)

        self._respond(body, prepare)

    def _stream(self, body: dict[str, Any], reply: Reply, ids: list[str]) -> None:
        head = {"request-id": _request_id()}
        content_type = "text/event-stream; charset=utf-8"
        drop_at = reply.drop_stream_after
        self._begin_chunked(content_type, head, reply.headers, drop_at=drop_at, no_cache=True)
        events = (_sse(name, data) for name, data in _events(body, reply, ids))
        if reply.status == 200:
            self._send_chunks(events, drop_at, reply.drop_mode)
            return
        # A scripted mid-stream error: that many events, the error, then a clean end.
        for event in itertools.islice(events, drop_at):
            self._chunk(event)
        self._chunk(_sse("error", _error_payload(reply.status, reply.error_message or "error")))
        self._end_chunked()


def _sse(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


def _fresh_tool_id(n: int) -> str:
    """A ``toolu_`` id shaped like Anthropic's, for a tool call scripted without one."""
    return f"toolu_{n:04d}{secrets.token_hex(10)}"


class AnthropicWireServer(LoopbackServer[Reply, dict[str, str]]):
    """A scriptable fake of ``POST /v1/messages`` on a loopback port.

    Replies come from the FIFO queue filled by :meth:`enqueue` first, then from
    ``responder`` (default: :func:`echo_responder`). Every JSON body received is
    kept in :attr:`requests`, and its headers (lower-cased names) at the same
    index of :attr:`headers`, so tests can assert on what the SDK really sent.
    """

    base_path = ""  # the SDK appends /v1/messages to the origin itself

    def __init__(
        self, *, responder: Responder | None = None, host: str = "127.0.0.1", port: int = 0
    ) -> None:
        super().__init__(_Handler, responder or echo_responder, host, port)

    @property
    def headers(self) -> list[dict[str, str]]:
        return self._records()


if __name__ == "__main__":
    serve_forever_cli(AnthropicWireServer, __doc__)

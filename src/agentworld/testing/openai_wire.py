"""Loopback HTTP server speaking the real OpenAI chat-completions wire format.

Why: fakes that stub the SDK's Python objects never exercise what production
exercises - HTTP framing, SSE parsing, tool-call delta reassembly, typed error
mapping, retries and keep-alive.  This server lets tests and benchmarks point the
*official* ``openai`` SDK at ``base_url`` and script exactly what comes back.
Stdlib only, so it can ship with the library and run as a separate process::

    python -m agentworld.testing.openai_wire [--port N]
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from agentworld.testing._loopback import (
    DropMode,
    LoopbackHandler,
    LoopbackServer,
    serve_forever_cli,
)
from agentworld.testing._loopback import pieces as _pieces

__all__ = [
    "DropMode",
    "OpenAIWireServer",
    "Reply",
    "Responder",
    "ToolCallSpec",
    "echo_responder",
]

_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error"}
_ERROR_TYPES |= {404: "not_found_error", 429: "rate_limit_exceeded"}


@dataclass(frozen=True)
class ToolCallSpec:
    """One scripted tool call; ``arguments`` is JSON text, exactly as OpenAI sends it."""

    name: str
    arguments: str
    id: str | None = None  # None -> the server assigns a unique "call_<n>"


@dataclass(frozen=True)
class Reply:
    """One scripted answer. Non-200 ``status`` turns it into an OpenAI-shaped error."""

    content: str | None = None
    tool_calls: tuple[ToolCallSpec, ...] = ()
    status: int = 200
    error_message: str = ""
    prompt_tokens: int | None = None  # None -> word count of the request messages
    completion_tokens: int | None = None  # None -> word count of content + arguments
    chunk_size: int = 4  # characters per streamed content / arguments delta
    headers: dict[str, str] = field(default_factory=dict)  # e.g. {"retry-after": "0"}
    delay: float = 0.0  # seconds to wait before answering (timeout tests)
    chunk_delay: float = 0.0  # streaming: seconds between events, so a reader sees them arrive
    drop_stream_after: int | None = None  # streaming: stop after N data events ...
    drop_mode: DropMode = "cut"  # ... this way: cut the socket, or end the body (see DropMode)

    @classmethod
    def text(cls, content: str, **kw: Any) -> Reply:
        return cls(content=content, **kw)

    @classmethod
    def tools(cls, *specs: ToolCallSpec, content: str | None = None, **kw: Any) -> Reply:
        return cls(content=content, tool_calls=tuple(specs), **kw)

    @classmethod
    def error(cls, status: int, message: str, **kw: Any) -> Reply:
        return cls(status=status, error_message=message, **kw)


Responder = Callable[[dict[str, Any]], Reply]


def _text_of(content: Any) -> str:
    """Flatten a message ``content`` (string or list of typed parts) to plain text."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


class AgentScript:
    """A responder that answers by agent: an agent whose system prompt is ``agent:<key>``
    gets ``by_agent[key](body)``, or by default says ``<name> heard: <last message>`` (the
    name is the key after its last ``/``); a request whose system prompt is
    ``title_instruction`` (the runtime's, passed in: this layer cannot import it) gets a title."""

    def __init__(self, title_instruction: str) -> None:
        self.title_instruction = title_instruction
        self.by_agent: dict[str, Responder] = {}

    def __call__(self, body: dict[str, Any]) -> Reply:
        first = body["messages"][0]
        if first["role"] != "system" or first["content"] == self.title_instruction:
            return Reply.text("A title")
        key = str(first["content"]).removeprefix("agent:")
        if key in self.by_agent:
            return self.by_agent[key](body)
        last = body["messages"][-1].get("content") or ""
        return Reply.text(f"{key.split('/')[-1]} heard: {last}")


def echo_responder(body: dict[str, Any]) -> Reply:
    """Default behaviour: answer ``echo: <last user message>``."""
    users = [m for m in body.get("messages", []) if isinstance(m, dict) and m.get("role") == "user"]
    return Reply.text("echo: " + (_text_of(users[-1].get("content")) if users else ""))


class _Handler(LoopbackHandler["OpenAIWireServer"]):
    def _send_error(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        kind = _ERROR_TYPES.get(status, "server_error" if status >= 500 else "api_error")
        err = {"message": message, "type": kind, "param": None, "code": kind}
        self._send_json(status, {"error": err}, headers)

    # -- routes -------------------------------------------------------------------
    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            model = {"id": "wire-test", "object": "model", "created": 0, "owned_by": "agentworld"}
            self._send_json(200, {"object": "list", "data": [model]})
        else:
            self._send_error(404, f"Unknown path {self.path}")

    def do_POST(self) -> None:
        body = self._read_json()
        if isinstance(body, dict):
            self.owner._record(body, self.path)
        path = self.path.split("?")[0].rstrip("/")
        # Azure OpenAI addresses a deployment: .../deployments/<name>/chat/completions?api-version=
        azure = re.fullmatch(r".*/deployments/[^/]+/chat/completions", path)
        if path != "/v1/chat/completions" and azure is None:
            self._send_error(404, f"Unknown path {self.path}")
            return
        if not isinstance(body, dict) or "model" not in body or "messages" not in body:
            self._send_error(400, "Request body must be a JSON object with 'model' and 'messages'.")
            return

        def prepare(reply: Reply) -> Callable[[], None]:
            return lambda: self._answer(body, reply)  # ids are numbered when it is sent

        self._respond(body, prepare)

    def _answer(self, body: dict[str, Any], reply: Reply) -> None:
        if reply.status != 200:
            self._send_error(reply.status, reply.error_message or "error", reply.headers)
            return
        ids = self.owner._ids_for((t.id for t in reply.tool_calls), lambda n: f"call_{n}")
        if body.get("stream"):
            self._stream(body, reply, ids)
        else:
            self._complete(body, reply, ids)

    def _complete(self, body: dict[str, Any], reply: Reply, ids: list[str]) -> None:
        message: dict[str, Any] = {"role": "assistant", "content": reply.content, "refusal": None}
        if reply.tool_calls:
            pairs = zip(ids, reply.tool_calls, strict=True)
            fns = [(cid, {"name": t.name, "arguments": t.arguments}) for cid, t in pairs]
            message["tool_calls"] = [{"id": i, "type": "function", "function": f} for i, f in fns]
        choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": _finish(reply)}
        payload = _envelope(body, "chat.completion")
        payload |= {"choices": [choice], "usage": _usage(body, reply)}
        self._send_json(200, payload, reply.headers)

    def _stream(self, body: dict[str, Any], reply: Reply, ids: list[str]) -> None:
        content_type = "text/event-stream; charset=utf-8"
        drop_at = reply.drop_stream_after
        self._begin_chunked(content_type, reply.headers, drop_at=drop_at, no_cache=True)
        events = (f"data: {event}\n\n".encode() for event in _events(body, reply, ids))
        self._send_chunks(_paced(events, reply.chunk_delay), drop_at, reply.drop_mode)


def _paced(events: Iterator[bytes], pause: float) -> Iterator[bytes]:
    """The events with ``pause`` seconds before each one after the first."""
    for n, event in enumerate(events):
        if n and pause > 0:
            time.sleep(pause)
        yield event


def _envelope(body: dict[str, Any], obj: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-" + uuid.uuid4().hex[:24],
        "object": obj,
        "created": int(time.time()),
        "model": body.get("model"),
        "system_fingerprint": "fp_agentworld",
    }


def _finish(reply: Reply) -> str:
    return "tool_calls" if reply.tool_calls else "stop"


def _usage(body: dict[str, Any], reply: Reply) -> dict[str, int]:
    prompt = reply.prompt_tokens
    if prompt is None:
        msgs = body.get("messages") or []
        prompt = sum(len(_text_of(m.get("content")).split()) for m in msgs if isinstance(m, dict))
    completion = reply.completion_tokens
    if completion is None:
        texts = [reply.content or "", *(t.arguments for t in reply.tool_calls)]
        completion = sum(len(t.split()) for t in texts)
    total = prompt + completion
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": total}


def _events(body: dict[str, Any], reply: Reply, ids: list[str]) -> Iterator[str]:
    """Yield the SSE ``data`` payloads of a streamed answer, ending with ``[DONE]``."""
    base = _envelope(body, "chat.completion.chunk")  # one id for every chunk, as OpenAI does
    with_usage = bool((body.get("stream_options") or {}).get("include_usage"))
    if with_usage:
        base["usage"] = None  # OpenAI sends usage: null on every chunk but the last

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return json.dumps(base | {"choices": [choice]})

    # Real API: content "" for text answers, null when the answer is tool calls only.
    yield chunk({"role": "assistant", "content": "" if reply.content is not None else None})
    for piece in _pieces(reply.content or "", reply.chunk_size):
        yield chunk({"content": piece})
    for i, (cid, spec) in enumerate(zip(ids, reply.tool_calls, strict=True)):
        head = {"index": i, "id": cid, "type": "function"}
        yield chunk({"tool_calls": [head | {"function": {"name": spec.name, "arguments": ""}}]})
        for frag in _pieces(spec.arguments, reply.chunk_size):
            yield chunk({"tool_calls": [{"index": i, "function": {"arguments": frag}}]})
    yield chunk({}, _finish(reply))
    if with_usage:
        yield json.dumps(base | {"choices": [], "usage": _usage(body, reply)})
    yield "[DONE]"


class OpenAIWireServer(LoopbackServer[Reply, str]):
    """A scriptable fake of ``POST /v1/chat/completions`` on a loopback port.

    Replies come from the FIFO queue filled by :meth:`enqueue` first, then from
    ``responder`` (default: :func:`echo_responder`). Every JSON body received is
    kept in :attr:`requests` so tests can assert on what the SDK actually sent.
    """

    base_path = "/v1"  # the SDK appends /chat/completions to a base_url ending in /v1

    def __init__(
        self, *, responder: Responder | None = None, host: str = "127.0.0.1", port: int = 0
    ) -> None:
        super().__init__(_Handler, responder or echo_responder, host, port)

    @property
    def paths(self) -> list[str]:
        """The request path (with query) of each recorded request, parallel to ``requests``."""
        return self._records()


if __name__ == "__main__":
    serve_forever_cli(OpenAIWireServer, __doc__)

"""Loopback HTTP server speaking the real Gemini API (``generativelanguage``) wire format.

The Gemini sibling of :mod:`agentworld.testing.openai_wire`: tests point the
official ``google-genai`` SDK at :attr:`GeminiWireServer.base_url` and script
the answers with the same :class:`Reply` / :class:`ToolCallSpec` values, so one
script drives every provider alike. What differs is Gemini's shape:

* ``POST /{version}/models/{model}:generateContent`` answers one
  ``GenerateContentResponse``; ``:streamGenerateContent?alt=sse`` answers SSE
  ``data:`` events, each a whole ``GenerateContentResponse``. Text is split
  across events, a ``functionCall`` arrives whole in one event, and the last
  event carries ``finishReason`` and the final ``usageMetadata``. ``drop_stream_after``
  counts these events and ``drop_mode`` says how the stream stops there (a cut socket,
  or a body that ends without ``finishReason``, between events or in the middle of one).
* Function calls carry ``args`` as a JSON object and usually no ``id``:
  ``ToolCallSpec.id=None`` sends none (unlike the OpenAI server, which makes one up).
* Errors are ``{"error": {"code", "message", "status"}}`` with a gRPC status name.
* With ``api_key`` set, a request with another key gets Gemini's answer to a bad
  key: **400** ``INVALID_ARGUMENT`` with reason ``API_KEY_INVALID`` (not a 401).

Stdlib only; runs as a process too: ``python -m agentworld.testing.gemini_wire``.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agentworld.testing._loopback import LoopbackHandler, LoopbackServer, serve_forever_cli
from agentworld.testing._loopback import pieces as _pieces
from agentworld.testing.openai_wire import DropMode, Reply, Responder, ToolCallSpec

__all__ = [
    "DropMode",
    "GeminiWireServer",
    "ReceivedRequest",
    "Reply",
    "ToolCallSpec",
    "echo_responder",
]

_GRPC_STATUS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED"}
_GRPC_STATUS |= {404: "NOT_FOUND", 409: "ABORTED", 429: "RESOURCE_EXHAUSTED", 499: "CANCELLED"}
_GRPC_STATUS |= {500: "INTERNAL", 501: "UNIMPLEMENTED", 503: "UNAVAILABLE"}
_GRPC_STATUS |= {504: "DEADLINE_EXCEEDED"}
_ROUTE = re.compile(r"^/(?P<version>v\d+\w*)/models/(?P<model>[^/:]+):(?P<method>\w+)$")
_LIST = re.compile(r"^/(?P<version>v\d+\w*)/models$")


@dataclass(frozen=True)
class ReceivedRequest:
    """What arrived besides the body: tests assert on the URL the SDK built and the key."""

    method: str  # "generateContent" | "streamGenerateContent" | ...
    path: str  # with the query string, e.g. "/v1beta/models/m:streamGenerateContent?alt=sse"
    version: str  # "v1beta"
    model: str
    api_key: str | None  # the x-goog-api-key header (or ?key=)
    body: Any


def _texts(content: Any) -> list[str]:
    parts = content.get("parts") if isinstance(content, dict) else None
    return [
        p["text"] for p in parts or [] if isinstance(p, dict) and isinstance(p.get("text"), str)
    ]


def echo_responder(body: dict[str, Any]) -> Reply:
    """Default behaviour: answer ``echo: <text of the last user content>``."""
    users = [
        c for c in body.get("contents") or [] if isinstance(c, dict) and c.get("role") == "user"
    ]
    return Reply.text("echo: " + (" ".join(_texts(users[-1])) if users else ""))


def _usage(body: dict[str, Any], reply: Reply) -> dict[str, int]:
    prompt = reply.prompt_tokens
    if prompt is None:
        contents = [*(body.get("contents") or []), body.get("systemInstruction")]
        prompt = sum(len(t.split()) for c in contents for t in _texts(c))
    completion = reply.completion_tokens
    if completion is None:
        texts = [reply.content or "", *(t.arguments for t in reply.tool_calls)]
        completion = sum(len(t.split()) for t in texts)
    usage = {"promptTokenCount": prompt, "candidatesTokenCount": completion}
    return usage | {"totalTokenCount": prompt + completion}


def _function_call(spec: ToolCallSpec) -> dict[str, Any]:
    args = json.loads(spec.arguments or "{}")
    if not isinstance(args, dict):
        raise ValueError(f"Gemini function-call args must be a JSON object, got {spec.arguments!r}")
    call: dict[str, Any] = {"name": spec.name, "args": args}
    if spec.id is not None:
        call["id"] = spec.id
    return {"functionCall": call}


def _response(
    parts: list[dict[str, Any]], usage: dict[str, int], model: str, rid: str, *, last: bool
) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}}
    if last:
        candidate["finishReason"] = "STOP"  # Gemini says STOP after function calls too
    candidate["index"] = 0
    return {"candidates": [candidate], "usageMetadata": usage} | {
        "modelVersion": model,  # Gemini names the exact model version that answered
        "responseId": rid,
    }


def _whole(body: dict[str, Any], reply: Reply, model: str) -> dict[str, Any]:
    """The ``generateContent`` answer: one response with every part."""
    calls = [_function_call(spec) for spec in reply.tool_calls]
    text = [{"text": reply.content or ""}] if reply.content or not calls else []
    return _response(text + calls, _usage(body, reply), model, _response_id(), last=True)


def _events(body: dict[str, Any], reply: Reply, model: str) -> list[dict[str, Any]]:
    """The ``streamGenerateContent`` answer: text split across chunks, each call whole."""
    rid, final = _response_id(), _usage(body, reply)
    # Gemini repeats the prompt count on every chunk; the output count is final only at the end.
    running = {"promptTokenCount": final["promptTokenCount"]}
    running["totalTokenCount"] = final["promptTokenCount"]
    parts = [{"text": piece} for piece in _pieces(reply.content or "", reply.chunk_size)]
    parts += [_function_call(spec) for spec in reply.tool_calls]
    parts = parts or [{"text": ""}]
    last = len(parts) - 1
    return [
        _response([part], final if i == last else running, model, rid, last=i == last)
        for i, part in enumerate(parts)
    ]


def _response_id() -> str:
    return uuid.uuid4().hex[:22]


_KEY_INVALID = {
    "@type": "type.googleapis.com/google.rpc.ErrorInfo",
    "reason": "API_KEY_INVALID",
    "domain": "googleapis.com",
    "metadata": {"service": "generativelanguage.googleapis.com"},
}


class _Handler(LoopbackHandler["GeminiWireServer"]):
    json_content_type = "application/json; charset=UTF-8"

    # -- plumbing -----------------------------------------------------------------
    def _send_error(
        self,
        status: int,
        message: str,
        headers: dict[str, str] | None = None,
        details: list[dict[str, Any]] | None = None,
    ) -> None:
        code = _GRPC_STATUS.get(status, "INTERNAL" if status >= 500 else "UNKNOWN")
        error: dict[str, Any] = {"code": status, "message": message, "status": code}
        if details:
            error["details"] = details
        self._send_json(status, {"error": error}, headers)

    # -- routes -------------------------------------------------------------------
    def do_GET(self) -> None:
        if _LIST.match(self.path.split("?")[0]) is None:
            self._send_error(404, f"Unknown path {self.path}")
            return
        methods = ["generateContent", "streamGenerateContent"]
        model = {"name": "models/wire-test", "supportedGenerationMethods": methods}
        self._send_json(200, {"models": [model]})

    def do_POST(self) -> None:
        body = self._read_json()
        owner = self.owner
        route = _ROUTE.match(self.path.split("?")[0])
        if route is None:
            self._send_error(404, f"Unknown path {self.path}")
            return
        method, model = route["method"], route["model"]
        query_key = re.search(r"[?&]key=([^&]+)", self.path)
        key = self.headers.get("x-goog-api-key") or (query_key[1] if query_key else None)
        owner._record(body, ReceivedRequest(method, self.path, route["version"], model, key, body))
        if method not in ("generateContent", "streamGenerateContent"):
            self._send_error(404, f"Method {method} is not served here.")
            return
        if owner.api_key is not None and key != owner.api_key:
            self._send_error(
                400, "API key not valid. Please pass a valid API key.", None, [_KEY_INVALID]
            )
            return
        if not isinstance(body, dict) or not isinstance(body.get("contents"), list):
            self._send_error(400, "* GenerateContentRequest.contents: contents is not specified")
            return

        def prepare(reply: Reply) -> Callable[[], None]:
            events = _events(body, reply, model)  # raises on a bad script, whatever is sent
            if reply.status != 200:
                error = reply.error_message or "error"
                return lambda: self._send_error(reply.status, error, reply.headers)
            if method == "streamGenerateContent":
                return lambda: self._stream(events, reply)
            whole = _whole(body, reply, model)
            return lambda: self._send_json(200, whole, reply.headers)

        self._respond(body, prepare)

    def _stream(self, events: list[dict[str, Any]], reply: Reply) -> None:
        self._begin_chunked("text/event-stream", reply.headers, drop_at=reply.drop_stream_after)
        chunks = (f"data: {json.dumps(event)}\r\n\r\n".encode() for event in events)
        self._send_chunks(chunks, reply.drop_stream_after, reply.drop_mode)


class GeminiWireServer(LoopbackServer[Reply, ReceivedRequest]):
    """A scriptable fake of Gemini's ``generateContent`` / ``streamGenerateContent``.

    Replies come from the FIFO queue filled by :meth:`enqueue` first, then from
    ``responder`` (default: :func:`echo_responder`), which receives the JSON
    body. :attr:`requests` keeps every JSON body; :attr:`received` adds the
    method, path, model and API key of each.
    """

    base_path = "/"  # for HttpOptions(base_url=...): the SDK appends {api_version}/models/...

    def __init__(
        self,
        *,
        responder: Responder | None = None,
        api_key: str | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        super().__init__(_Handler, responder or echo_responder, host, port)
        self.api_key = api_key
        """When set, any other key is refused the way Gemini refuses a bad key."""

    @property
    def received(self) -> list[ReceivedRequest]:
        return self._records()


if __name__ == "__main__":
    serve_forever_cli(GeminiWireServer, __doc__)

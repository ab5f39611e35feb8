"""What an OpenAI-compatible endpoint learns from our requests: the key and the SDK's own
headers, none of the SDK's platform headers (this host's OS, CPU and Python). A real loopback
HTTP server that records the headers it gets."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from agentworld.providers.base import LLMRequest, PromptMessage
from agentworld.providers.openai import SDK_PLATFORM_HEADERS, OpenAIProvider

ANSWER = {
    "id": "c1",
    "object": "chat.completion",
    "created": 0,
    "model": "m",
    "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "hi"}}],
}


@pytest.fixture
def recorded() -> Iterator[tuple[str, list[dict[str, str]]]]:
    seen: list[dict[str, str]] = []

    class Record(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length", "0")))
            seen.append({name.lower(): value for name, value in self.headers.items()})
            body = json.dumps(ANSWER).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Record)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", seen
    finally:
        server.shutdown()
        server.server_close()


async def test_requests_carry_the_key_and_no_platform_headers(recorded: tuple[str, list[dict[str, str]]]) -> None:
    url, seen = recorded
    provider = OpenAIProvider(api_key="sk-test", base_url=url, timeout=5.0)
    try:
        reply = await provider.complete(LLMRequest(model="m", messages=[PromptMessage(role="user", content="hi")]))
    finally:
        await provider.aclose()

    assert reply.content == "hi"
    [headers] = seen
    assert headers["authorization"] == "Bearer sk-test"
    assert headers["user-agent"].startswith("AsyncOpenAI/Python")
    assert not {name.lower() for name in SDK_PLATFORM_HEADERS} & headers.keys()

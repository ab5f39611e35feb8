"""Redirects are the SDK's: an ``http://`` endpoint that redirects to ``https://`` is followed
with the SDK's TLS defaults, so a certificate no one trusts is refused, never talked to
unverified. Real sockets: a loopback HTTP server that redirects, and a loopback TLS server with
a self-signed certificate (``data/self_signed_127.pem``, key and certificate for 127.0.0.1)
that would answer.
"""

from __future__ import annotations

import json
import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from agentworld.errors import ProviderConnectionError
from agentworld.providers.base import LLMRequest, PromptMessage
from agentworld.providers.openai import OpenAIProvider

PEM = Path(__file__).parent / "data" / "self_signed_127.pem"
ANSWER = {
    "id": "c1",
    "object": "chat.completion",
    "created": 0,
    "model": "m",
    "choices": [
        {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "over TLS"}}
    ],
    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
}


class _Answer(BaseHTTPRequestHandler):
    served: list[str] = []

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", "0")))
        type(self).served.append(self.path)
        body = json.dumps(ANSWER).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def _serve(server: ThreadingHTTPServer) -> Iterator[ThreadingHTTPServer]:
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def tls_server() -> Iterator[ThreadingHTTPServer]:
    _Answer.served = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Answer)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(PEM)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    yield from _serve(server)


@pytest.fixture
def redirect_to(tls_server: ThreadingHTTPServer) -> Iterator[str]:
    """A plain HTTP endpoint whose every request is sent on to the TLS server."""
    target = f"https://127.0.0.1:{tls_server.server_address[1]}"

    class Redirect(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length", "0")))
            self.send_response(307)
            self.send_header("location", target + self.path)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Redirect)
    for running in _serve(server):
        yield f"http://127.0.0.1:{running.server_address[1]}/v1"


def ask() -> LLMRequest:
    return LLMRequest(model="m", messages=[PromptMessage(role="user", content="hi")])


async def test_a_plain_http_endpoint_redirected_to_tls_refuses_the_certificate(
    redirect_to: str,
) -> None:
    provider = OpenAIProvider(api_key="k", base_url=redirect_to, timeout=5.0)
    try:
        with pytest.raises(ProviderConnectionError):
            await provider.complete(ask())
    finally:
        await provider.aclose()
    assert _Answer.served == []  # the TLS server never got the request


async def test_the_same_tls_server_answers_a_client_that_skips_verification(
    tls_server: ThreadingHTTPServer,
) -> None:
    """The control: the TLS server is sound and answers when verification is off, so the
    refusal above is the certificate's, not a broken server's."""
    import openai

    port = tls_server.server_address[1]
    client = openai.AsyncOpenAI(
        api_key="k",
        base_url=f"https://127.0.0.1:{port}/v1",
        max_retries=0,
        http_client=openai.DefaultAsyncHttpxClient(verify=False),
    )
    provider = OpenAIProvider(api_key="k", client=client)
    try:
        reply = await provider.complete(ask())
    finally:
        await provider.aclose()
    assert reply.content == "over TLS"
    assert _Answer.served == ["/v1/chat/completions"]

"""An OpenAI chat-completions loopback server on asyncio, run in a child process.

Why: :class:`~agentworld.testing.openai_wire.OpenAIWireServer` runs a thread per
connection inside the process under test. That is what tests want (scripted replies,
every body kept), but with a thousand connections open at once the threads, and the
GIL they share with the code being measured, make the server the bottleneck: the bare
``openai`` SDK reached 81 requests/s against it, with timeouts. This server answers
every request at once from one event loop in its own process (aiohttp's server), so a
benchmark measures the client, not the harness, and the server's CPU is not charged to the
client.

It speaks the same wire format as ``OpenAIWireServer`` for what a benchmark sends:
``POST /v1/chat/completions`` streamed (SSE in a chunked body, ``include_usage``
honoured) or not, answered by :func:`~agentworld.testing.openai_wire.echo_responder`
(optionally after ``--delay`` seconds, a slow model: the loop waits, no thread does), and
``GET /v1/models``. It keeps counts, not bodies: ``GET /_wire/stats`` and
``POST /_wire/clear`` (what :class:`OpenAIWireProcess` calls)::

    python -m agentworld.testing.openai_wire_async [--port N] [--delay S]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import http.client
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any, Self

from aiohttp import web

from agentworld.testing.openai_wire import _envelope, _events, _finish, _usage, echo_responder
from agentworld.testing.processes import stop_process

__all__ = ["OpenAIWireProcess", "WireStats", "serve"]

_MODELS = {
    "object": "list",
    "data": [{"id": "wire-test", "object": "model", "created": 0, "owned_by": "agentworld"}],
}

WireStats = dict[str, int]
"""``requests`` (chat completions answered), ``streamed`` (of those, streamed),
``errors`` (requests answered 4xx/5xx) and ``connections`` (connections that carried a chat
completion since the last clear: how wide the client's pool went)."""


class _Counts:
    """What the server has seen; one event loop, so no lock."""

    def __init__(self) -> None:
        self.carried: set[int] = set()
        self.clear()

    def clear(self) -> None:
        self.requests = self.streamed = self.errors = 0
        self.carried.clear()

    def as_dict(self) -> WireStats:
        return {
            "requests": self.requests,
            "streamed": self.streamed,
            "errors": self.errors,
            "connections": len(self.carried),
        }


def _completion(body: dict[str, Any]) -> dict[str, Any]:
    """The non-streamed answer, shaped as ``OpenAIWireServer._complete`` shapes it."""
    reply = echo_responder(body)
    message = {"role": "assistant", "content": reply.content, "refusal": None}
    choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": _finish(reply)}
    payload = _envelope(body, "chat.completion")
    return payload | {"choices": [choice], "usage": _usage(body, reply)}


def _app(counts: _Counts, delay: float) -> web.Application:
    """The routes, on aiohttp's server: chat completions (echoed), models, and the counts."""

    def error(status: int, message: str) -> web.Response:
        counts.errors += 1
        kind = "invalid_request_error" if status == 400 else "not_found_error"
        err = {"message": message, "type": kind, "param": None, "code": kind}
        return web.json_response({"error": err}, status=status)

    async def completions(request: web.Request) -> web.StreamResponse:
        try:
            body = json.loads(await request.read() or b"null")
        except ValueError:
            body = None
        if not isinstance(body, dict) or "model" not in body or "messages" not in body:
            return error(400, "Request body must be a JSON object with 'model' and 'messages'.")
        counts.requests += 1
        if request.transport is not None:
            counts.carried.add(id(request.transport))
        if delay > 0:
            await asyncio.sleep(delay)
        if not body.get("stream"):
            return web.json_response(_completion(body))
        counts.streamed += 1
        stream = web.StreamResponse(
            headers={"Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-cache"}
        )
        await stream.prepare(request)
        for event in _events(body, echo_responder(body), []):
            await stream.write(f"data: {event}\n\n".encode())
        await stream.write_eof()
        return stream

    async def models(_request: web.Request) -> web.Response:
        return web.json_response(_MODELS)

    async def stats(_request: web.Request) -> web.Response:
        return web.json_response(counts.as_dict())

    async def clear(_request: web.Request) -> web.Response:
        counts.clear()
        return web.json_response({})

    @web.middleware
    async def unknown_paths(request: web.Request, handler: Any) -> web.StreamResponse:
        try:
            response: web.StreamResponse = await handler(request)
        except web.HTTPNotFound:
            return error(404, f"Unknown path {request.path}")
        return response

    app = web.Application(middlewares=[unknown_paths])
    app.router.add_post("/v1/chat/completions", completions)
    app.router.add_post("/chat/completions", completions)
    app.router.add_get("/v1/models", models)
    app.router.add_get("/_wire/stats", stats)
    app.router.add_post("/_wire/clear", clear)
    return app


async def serve(host: str, port: int, *, delay: float = 0.0) -> None:
    """Serve until cancelled; print the base URL (first stdout line) once listening."""
    runner = web.AppRunner(_app(_Counts(), delay), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port, backlog=4096, reuse_address=True)
    await site.start()
    bound_host, bound_port = runner.addresses[0][:2]
    print(f"http://{bound_host}:{bound_port}/v1", flush=True)
    try:
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()


def main(argv: list[str] | None = None) -> None:
    summary = (__doc__ or "").splitlines()[0]
    parser = argparse.ArgumentParser(description=summary)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--delay", type=float, default=0.0, help="seconds before each answer")
    args = parser.parse_args(argv)

    async def run() -> None:
        task = asyncio.current_task()
        assert task is not None
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, task.cancel)
        with contextlib.suppress(asyncio.CancelledError):
            await serve(args.host, args.port, delay=args.delay)

    asyncio.run(run())


class OpenAIWireProcess:
    """:func:`serve` in a child process, for the duration of a ``with`` block.

    Only counts come back (:meth:`stats`); a benchmark that needs to see bodies or script
    replies wants ``OpenAIWireServer`` instead.
    """

    def __init__(self, *, host: str = "127.0.0.1", port: int = 0, delay: float = 0.0) -> None:
        self._argv = [
            sys.executable,
            "-m",
            "agentworld.testing.openai_wire_async",
            "--host",
            host,
            "--port",
            str(port),
            "--delay",
            repr(delay),
        ]
        self._process: subprocess.Popen[str] | None = None
        self._base_url = ""

    @property
    def base_url(self) -> str:
        """What to give the SDK as its ``base_url`` (ends in ``/v1``)."""
        if self._process is None:
            raise RuntimeError("server not started")
        return self._base_url

    @property
    def pid(self) -> int:
        if self._process is None:
            raise RuntimeError("server not started")
        return self._process.pid

    def start(self) -> Self:
        if self._process is not None:
            return self
        process = subprocess.Popen(self._argv, stdout=subprocess.PIPE, text=True)
        assert process.stdout is not None
        line = process.stdout.readline().strip()
        if not line.startswith("http://"):
            process.kill()
            process.wait()
            raise RuntimeError(f"loopback server did not start (exit {process.poll()})")
        self._process, self._base_url = process, line
        return self

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is not None:
            stop_process(process)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _control(self, method: str, path: str) -> Any:
        host, port = self.base_url.removeprefix("http://").split("/")[0].rsplit(":", 1)
        conn = http.client.HTTPConnection(host, int(port), timeout=10)
        try:
            conn.request(method, path)
            return json.loads(conn.getresponse().read())
        finally:
            conn.close()

    def stats(self) -> WireStats:
        """The server's counts (see :data:`WireStats`); a blocking loopback call."""
        return {key: int(value) for key, value in self._control("GET", "/_wire/stats").items()}

    def clear(self) -> None:
        """Zero the counts (open connections stay counted)."""
        self._control("POST", "/_wire/clear")

    def cpu_seconds(self) -> float:
        """User + system CPU time the server process has used so far (Linux ``/proc``)."""
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


if __name__ == "__main__":
    main()

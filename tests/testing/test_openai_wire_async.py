"""The child-process asyncio OpenAI server, driven through the real ``openai`` SDK.

It must answer what a benchmark sends exactly as ``OpenAIWireServer`` does (the same
parsed objects, ids and timestamps aside), stream and not, and count what it saw.
"""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import openai
import pytest

from agentworld.testing.openai_wire import OpenAIWireServer
from agentworld.testing.openai_wire_async import OpenAIWireProcess
from agentworld.testing.processes import module_server, stop_process

MSGS: Any = [
    {"role": "system", "content": "be brief"},
    {"role": "user", "content": "hello there world, how are you today?"},
]


@pytest.fixture(scope="module")
def process() -> Iterator[OpenAIWireProcess]:
    with OpenAIWireProcess() as server:
        yield server


@pytest.fixture
async def client(process: OpenAIWireProcess) -> AsyncIterator[openai.AsyncOpenAI]:
    process.clear()
    async with openai.AsyncOpenAI(base_url=process.base_url, api_key="t", max_retries=0) as c:
        yield c


def without_ids(obj: Any) -> Any:
    data = obj.model_dump()
    data.pop("id")
    data.pop("created")
    return data


async def both(call: Any) -> tuple[Any, Any]:
    """``call(client)`` against each server: (the threaded one's answer, this one's)."""
    answers = []
    with OpenAIWireServer() as threaded, OpenAIWireProcess() as child:
        for base_url in (threaded.base_url, child.base_url):
            async with openai.AsyncOpenAI(base_url=base_url, api_key="t", max_retries=0) as c:
                answers.append(await call(c))
    return answers[0], answers[1]


async def test_non_streamed_answer_is_the_threaded_servers() -> None:
    async def call(c: openai.AsyncOpenAI) -> Any:
        return without_ids(await c.chat.completions.create(model="gpt-x", messages=MSGS))

    threaded, child = await both(call)
    assert child == threaded
    assert child["choices"][0]["message"]["content"] == "echo: hello there world, how are you today?"
    assert child["usage"]["prompt_tokens"] == 9  # words in the messages


@pytest.mark.parametrize("usage", [True, False])
async def test_streamed_answer_is_the_threaded_servers(usage: bool) -> None:
    async def call(c: openai.AsyncOpenAI) -> Any:
        options: Any = {"include_usage": True} if usage else openai.omit
        stream = await c.chat.completions.create(
            model="gpt-x", messages=MSGS, stream=True, stream_options=options
        )
        ids, chunks = set(), []
        async with stream:
            async for chunk in stream:
                ids.add(chunk.id)
                chunks.append(without_ids(chunk))
        assert len(ids) == 1  # one id for every chunk, as OpenAI does
        return chunks

    threaded, child = await both(call)
    assert child == threaded
    text = "".join(c["choices"][0]["delta"]["content"] or "" for c in child if c["choices"])
    assert text == "echo: hello there world, how are you today?"
    assert (child[-1]["usage"] is not None) is usage


async def test_counts_requests_and_connections_and_clears(
    process: OpenAIWireProcess, client: openai.AsyncOpenAI
) -> None:
    await client.chat.completions.create(model="m", messages=MSGS)
    stream = await client.chat.completions.create(model="m", messages=MSGS, stream=True)
    async with stream:
        async for _ in stream:
            pass

    stats = process.stats()
    assert (stats["requests"], stats["streamed"], stats["errors"]) == (2, 1, 0)
    assert stats["connections"] == 1  # keep-alive: both on one connection
    process.clear()
    assert process.stats()["requests"] == 0


async def test_errors_are_openai_shaped_and_counted(
    process: OpenAIWireProcess, client: openai.AsyncOpenAI
) -> None:
    with pytest.raises(openai.BadRequestError, match="'model' and 'messages'"):
        await client.post("/chat/completions", body={"model": "m"}, cast_to=object)
    with pytest.raises(openai.NotFoundError, match="Unknown path"):
        await client.post("/embeddings", body={"model": "m"}, cast_to=object)

    stats = process.stats()
    assert (stats["requests"], stats["errors"]) == (0, 2)


async def test_models_endpoint(client: openai.AsyncOpenAI) -> None:
    models = [m.id async for m in client.models.list()]
    assert models == ["wire-test"]


async def test_delay_holds_each_answer_without_holding_the_others() -> None:
    with OpenAIWireProcess(delay=0.5) as server:
        async with openai.AsyncOpenAI(base_url=server.base_url, api_key="t", max_retries=0) as c:
            started = time.perf_counter()
            await asyncio.gather(
                *(c.chat.completions.create(model="m", messages=MSGS) for _ in range(50))
            )
            elapsed = time.perf_counter() - started
    assert 0.5 <= elapsed < 2.5  # fifty at once, not one after another


def test_requests_on_one_connection_are_answered_in_order(process: OpenAIWireProcess) -> None:
    """Two requests sent back to back (pipelined) get their answers in order, and a
    ``Connection: close`` request ends the connection after its answer."""
    host, port = process.base_url.removeprefix("http://").split("/")[0].rsplit(":", 1)
    bodies = [json.dumps({"model": "m", "messages": [{"role": "user", "content": t}]}) for t in "ab"]
    raw = b"".join(
        (
            f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n{'Connection: close' if n else 'X: y'}\r\n\r\n{body}"
        ).encode()
        for n, body in enumerate(bodies)
    )
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(raw)
        received = b""
        while chunk := sock.recv(65536):  # ends when the server closes
            received += chunk
    answers = received.split(b"HTTP/1.1 200 OK")[1:]
    assert len(answers) == 2
    assert b"echo: a" in answers[0] and b"echo: b" in answers[1]
    assert b"Connection: close" in answers[1]


def test_runs_as_a_process_and_exits_cleanly_on_sigterm() -> None:
    with module_server("agentworld.testing.openai_wire_async") as (base_url, proc):
        assert base_url.startswith("http://127.0.0.1:") and base_url.endswith("/v1")
        with openai.OpenAI(base_url=base_url, api_key="t", max_retries=0) as c:
            resp = c.chat.completions.create(model="m", messages=MSGS)
        assert resp.choices[0].message.content == "echo: hello there world, how are you today?"
        assert stop_process(proc) == 0

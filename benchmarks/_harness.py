"""Shared plumbing for the benchmarks in this folder (SPEC §6).

Every benchmark runs one world in a throw-away SQLite file against a loopback model server
(``OpenAIWireServer``, or the child-process ``OpenAIWireProcess`` where the load is
heavy), and compares what Agent World costs with what the bare
``openai`` SDK costs against the same server in the same run. The helpers here
build that world, make the raw SDK calls, and summarise timings; they hold no
measurement policy of their own.
"""

from __future__ import annotations

import statistics
import tempfile
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

import openai

from agentworld import AgentWorld
from agentworld.providers.openai import DEFAULT_MAX_CONNECTIONS, sdk_client
from agentworld.providers.registry import OPENAI_TIMEOUT
from agentworld.testing.openai_wire import Reply, ToolCallSpec, echo_responder

if TYPE_CHECKING:
    from agentworld import WorldRuntime

WORLD = "bench"
PLAIN_MODEL = "bench-plain"
TOOL_MODEL = "bench-tool"
TURN_LIMIT = 10_000  # the highest a world accepts; every human message resets the count anyway
NOTE_FILE = "note.txt"
NOTE_TEXT = "bench-note-7f3a: the answer is 42\n"
"""A small file in every bench world's working directory, for the real ``read_file`` tool
(allowed without approval by the shipped policy). The marker proves the result reached the
model."""
READ_NOTE_ARGUMENTS = '{"path": "note.txt"}'
_REQUEST_KEYS = ("model", "messages", "tools", "temperature", "max_tokens")


# -- statistics ------------------------------------------------------------------


def percentile(samples: Sequence[float], q: float) -> float:
    """The ``q``-quantile (0..1) with linear interpolation; ``samples`` need not be sorted."""
    ordered = sorted(samples)
    if not ordered:
        return float("nan")
    pos = (len(ordered) - 1) * q
    low = int(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


@dataclass(frozen=True)
class Stats:
    """A summary of wall times, in milliseconds."""

    n: int
    median: float
    p90: float
    mean: float

    @classmethod
    def of(cls, seconds: Sequence[float]) -> Stats:
        ms = [s * 1000.0 for s in seconds]
        if not ms:
            return cls(0, float("nan"), float("nan"), float("nan"))
        return cls(len(ms), statistics.median(ms), percentile(ms, 0.9), statistics.fmean(ms))

    def line(self, label: str, *, width: int = 44) -> str:
        return (
            f"  {label:<{width}} median {self.median:8.2f} ms   p90 {self.p90:8.2f} ms"
            f"   (n={self.n})"
        )


def ratio(numerator: float, denominator: float) -> float:
    return numerator / denominator if denominator > 0 else float("nan")


# -- the loopback model ------------------------------------------------------------


def wants_tool_call(body: dict[str, Any]) -> bool:
    """``TOOL_MODEL`` asks for a tool after a user message (title requests excepted)."""
    messages = body.get("messages") or []
    last_role = messages[-1].get("role") if messages and isinstance(messages[-1], dict) else None
    return body.get("model") == TOOL_MODEL and last_role == "user" and not is_title_request(body)


def tool_then_text(body: dict[str, Any]) -> Reply:
    """``TOOL_MODEL`` asks for one real, allowed ``read_file`` call after a user message, then
    answers text.

    Every other model (and every tool-result round) gets the default echo, so one
    server serves plain turns, tool turns and the raw calls alike.
    """
    if wants_tool_call(body):
        return Reply.tools(ToolCallSpec(name="read_file", arguments=READ_NOTE_ARGUMENTS))
    return echo_responder(body)


def tool_result_seen(body: dict[str, Any]) -> bool:
    """Whether the request carries a tool result holding the note (the tool really ran)."""
    return any(
        isinstance(m, dict)
        and m.get("role") == "tool"
        and "bench-note-7f3a" in str(m.get("content"))
        for m in body.get("messages") or ()
    )


def request_params(body: dict[str, Any]) -> dict[str, Any]:
    """The ``create`` keyword arguments that reproduce a request the server received."""
    return {key: body[key] for key in _REQUEST_KEYS if key in body}


def is_title_request(body: dict[str, Any]) -> bool:
    """Title requests (SPEC O5) start with the naming instruction; they are not turn calls."""
    messages = body.get("messages") or []
    first = messages[0] if messages else {}
    return isinstance(first, dict) and "You name conversations" in str(first.get("content"))


def default_client(base_url: str) -> openai.AsyncOpenAI:
    """The SDK client as an application makes it, on the transport Agent World's provider uses
    too (``openai.DefaultAioHttpClient``, the SDK's transport for many concurrent requests), so
    every system in a comparison sends through the same HTTP stack (SPEC §6)."""
    return openai.AsyncOpenAI(
        base_url=base_url, api_key="x", max_retries=0, http_client=openai.DefaultAioHttpClient()
    )


class RawClient:
    """The baseline: the official SDK called directly, the way the spec measures it."""

    def __init__(
        self, base_url: str, *, stream: bool, low_level: bool = False, our_transport: bool = False
    ) -> None:
        """``our_transport``: the SDK client Agent World's provider builds for this endpoint
        (``sdk_client``: the SDK's own HTTP client, its pool sized as ours, the same headers)
        instead of the SDK's default; with ``low_level``, a non-streamed request is then posted
        as the provider posts it (``client.post``, the body read as parsed JSON), so that a turn
        and its replay send the same bytes by the same code and differ by the runtime's work
        alone."""
        self._our_transport = our_transport
        if our_transport:
            self._client = sdk_client(
                api_key="x",
                base_url=base_url,
                timeout=OPENAI_TIMEOUT,
                max_connections=DEFAULT_MAX_CONNECTIONS,
            )
        else:
            self._client = default_client(base_url)
        self._stream = stream
        self._low_level = low_level
        """Send through the SDK's documented ``client.post`` (as our provider does), skipping
        the per-message request transform of ``create``: the baseline that isolates our cost."""

    async def call(self, params: dict[str, Any]) -> str:
        """One chat completion; with streaming, the whole stream is consumed."""
        if self._low_level and not self._stream and self._our_transport:
            body: Any = await self._client.post("/chat/completions", body=params, cast_to=object)
            return body["choices"][0]["message"]["content"] or ""
        if self._low_level and not self._stream:
            from openai.types.chat import ChatCompletion

            completion = await self._client.post(
                "/chat/completions", body=params, cast_to=ChatCompletion
            )
            return completion.choices[0].message.content or ""
        if not self._stream:
            completion = await self._client.chat.completions.create(**params)
            return completion.choices[0].message.content or ""
        stream = await self._client.chat.completions.create(
            **params, stream=True, stream_options={"include_usage": True}
        )
        parts: list[str] = []
        async with stream:
            async for chunk in stream:
                parts.extend(c.delta.content or "" for c in chunk.choices)
        return "".join(parts)

    async def aclose(self) -> None:
        await self._client.close()


def small_request(model: str = PLAIN_MODEL) -> dict[str, Any]:
    """A one-message request: the smallest call an agent turn could possibly make."""
    return {"model": model, "messages": [{"role": "user", "content": "@a1 hi"}]}


# -- the world under test ------------------------------------------------------------


class ModelServer(Protocol):
    """What a bench world needs of its model server: where it is."""

    @property
    def base_url(self) -> str: ...


ServerT = TypeVar("ServerT", bound=ModelServer)


@dataclass
class BenchWorld(Generic[ServerT]):
    aw: AgentWorld
    runtime: WorldRuntime
    server: ServerT
    db_path: Path

    async def new_chat(self) -> str:
        """A chat straight from the runtime (no ``current_chat`` bookkeeping in the way)."""
        return (await self.runtime.new_chat()).chat_id

    async def turn(self, chat_id: str, text: str) -> None:
        """Message in -> every answer persisted and published."""
        await self.runtime.send(chat_id, text)
        await self.runtime.wait_until_idle(chat_id)


@asynccontextmanager
async def bench_world(
    server: ServerT,
    *,
    stream: bool,
    agents: Sequence[tuple[str, str]] = (("a1", PLAIN_MODEL),),
    system_prompt: str = "",
) -> AsyncIterator[BenchWorld[ServerT]]:
    """A world with ``agents`` (name, model) on ``server``, in a temp dir removed afterwards.

    The temp dir is the world's working directory and holds ``NOTE_FILE``.
    """
    with tempfile.TemporaryDirectory(prefix="agentworld-bench-") as tmp:
        db_path = Path(tmp) / "bench.db"
        (Path(tmp) / NOTE_FILE).write_text(NOTE_TEXT)
        async with AgentWorld(f"sqlite:///{db_path}") as aw:
            await aw.create_world(WORLD, streaming=stream, turn_limit=TURN_LIMIT, working_dir=tmp)
            for name, model in agents:
                await aw.create_agent(
                    WORLD,
                    name,
                    provider="openai",
                    model=model,
                    base_url=server.base_url,
                    system_prompt=system_prompt,
                )
            runtime = await aw.runtime(WORLD)
            yield BenchWorld(aw=aw, runtime=runtime, server=server, db_path=db_path)


def header(title: str, **facts: object) -> None:
    print(title)
    print("=" * len(title))
    for key, value in facts.items():
        print(f"  {key.replace('_', ' ')}: {value}")
    print()

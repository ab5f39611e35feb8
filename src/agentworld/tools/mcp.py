"""MCP servers as a source of tools (SPEC T3), through the official ``mcp`` SDK.

A world configures servers in the usual ``{"mcpServers": {...}}`` shape, which
``parse_mcp_config`` checks strictly. ``MCPClients`` starts them lazily (all at
once, on the first ``tools()``), keeps one session per server, and offers each
server tool as ``server__tool``; a tool whose own name claims another
configured server's prefix is refused (P8). A server that cannot start, or
dies, is reported through ``on_error`` while the others keep working; a dead
server is started again on its next call. Each tool carries its annotations and
its server's ``trust`` flag, which decide its default policy (ask unless
read-only or trusted, ``runtime/authorizer.py``).

A stdio server runs in the world's sandbox (SPEC C2, ``tools/sandbox.py``) unless its entry
says ``"sandbox": false``: the working directory its only writable place, the network as the
world allows, its home hidden but for where its program is installed. With ``sandbox = "on"``
and no sandbox to be had, it does not start.

The SDK's transports and sessions are anyio context managers whose cancel
scopes belong to the task that entered them. So every session has one owner
task that opens transport and session, parks until told to stop (or until the
server goes away) and closes them; calls from other tasks only use the session.
"""

from __future__ import annotations

import asyncio
import logging
import os
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any, TextIO

import anyio
from mcp import Client, MCPError, StdioServerParameters
from mcp import Tool as MCPTool
from mcp.client import Transport
from mcp.client._transport import ReadStream, TransportStreams
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.message import SessionMessage
from mcp.types import (
    CONNECTION_CLOSED,
    REQUEST_TIMEOUT,
    CallToolResult,
    ContentBlock,
    EmbeddedResource,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

from agentworld.errors import AgentWorldError, InvalidInputError
from agentworld.tools.mcp_config import (
    SEPARATOR,
    MCPServerConfig,
    MCPTransport,
    check_server_name,
    parse_mcp_config,
)
from agentworld.tools.process_privacy import keep_process_private
from agentworld.tools.registry import Tool, ToolContext
from agentworld.tools.sandbox import KeptFiles, SandboxStatus, server_argv

__all__ = [
    "SEPARATOR",
    "MCPClients",
    "MCPServerConfig",
    "MCPServerError",
    "MCPTransport",
    "check_server_name",
    "parse_mcp_config",
    "tool_result_value",
]

logger = logging.getLogger(__name__)

ErrorHandler = Callable[[str, Exception], Awaitable[None]]
_HINTS = ("title", "readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")
_STDERR_TAIL = 800
_MAX_TOOL_PAGES = 100
_CALL_FAILURES = {
    # A closed connection is not retried: the server may have acted before it went away.
    CONNECTION_CLOSED: "closed the connection during the call to {tool!r}",
    REQUEST_TIMEOUT: "did not answer {tool!r} within {timeout:g}s",
}


class MCPServerError(AgentWorldError):
    """An MCP server could not start, went away, or answered a call with an error."""

    def __init__(self, message: str, *, server: str) -> None:
        super().__init__(message)
        self.server = server


# -- results (pure) ---------------------------------------------------------------------------


def tool_result_value(result: CallToolResult) -> Any:
    """What a successful call gives the loop: the structured content if any, else the text."""
    if result.structured_content is not None:
        return result.structured_content
    return _content_text(result.content)


def _content_text(blocks: Iterable[ContentBlock]) -> str:
    """Text blocks joined by newlines; other blocks summarised, e.g. ``[image/png]``."""
    parts: list[str] = []
    for block in blocks:
        if isinstance(block, TextContent):
            parts.append(block.text)
        elif isinstance(block, ResourceLink):
            parts.append(f"[resource {block.uri}]")
        elif isinstance(block, EmbeddedResource):
            inner = block.resource
            if isinstance(inner, TextResourceContents):
                parts.append(inner.text)
            else:
                parts.append(f"[{inner.mime_type or 'resource'} {inner.uri}]")
        else:  # image or audio
            parts.append(f"[{block.mime_type}]")
    return "\n".join(parts)


def _describe(exc: BaseException) -> str:
    """One line about an exception, looking inside the groups anyio task groups raise."""
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_describe(inner) for inner in exc.exceptions)
    if isinstance(exc, MCPError):
        return exc.error.message
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


# -- sessions ---------------------------------------------------------------------------------


class _WatchedReadStream:
    """A transport's read stream that calls ``gone`` when the session ends.

    Only the dispatcher's read loop receives from it, and that loop ends with an
    exception here (end of stream, or the cancellation after a transport failure),
    before the dispatcher wakes pending callers with "connection closed": so no
    later call can find a dead session alive.
    """

    def __init__(
        self, inner: ReadStream[SessionMessage | Exception], gone: Callable[[], None]
    ) -> None:
        self._inner, self._gone = inner, gone

    @property
    def last_context(self) -> Any:  # the HTTP transport's sender contextvars
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> SessionMessage | Exception:
        try:
            return await self._inner.receive()
        except BaseException:
            self._gone()
            raise

    def __aiter__(self) -> _WatchedReadStream:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> _WatchedReadStream:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


@asynccontextmanager
async def _watched(
    transport: Transport, gone: Callable[[], None]
) -> AsyncIterator[TransportStreams]:
    async with transport as (read_stream, write_stream):
        yield _WatchedReadStream(read_stream, gone), write_stream


class _Server:
    """One configured server across restarts: a session owned by one task, started on demand."""

    def __init__(
        self,
        config: MCPServerConfig,
        *,
        timeout: float,
        report: ErrorHandler,
        containment: SandboxStatus | None = None,
        kept: KeptFiles = ((), ()),
    ) -> None:
        self.config, self.name, self._timeout, self._report = config, config.name, timeout, report
        self._containment = containment if config.command is not None and config.sandbox else None
        """The world's sandbox when this server runs in it (a stdio server not marked
        ``"sandbox": false``); None when it runs outside."""
        self._kept = kept
        self._lock = asyncio.Lock()
        self._owner: asyncio.Task[MCPServerError | None] | None = None
        self._client: Client | None = None
        self._wake = asyncio.Event()
        """Set to stop the owner task, or when the server went away."""
        self._stopping = self._lost = False

    async def client(self) -> Client:
        """The live session's client. A dead session is closed and the server started once more."""
        async with self._lock:
            if self._client is not None and not self._wake.is_set():
                return self._client
            await self._stop()
            self._wake, self._stopping, self._lost = asyncio.Event(), False, False
            ready = asyncio.Event()
            # Kept before awaiting: if this caller is cancelled, the next one (or aclose) reaps it.
            self._owner = asyncio.create_task(self._own(ready), name=f"mcp-server:{self.name}")
            await ready.wait()
            if self._client is None:
                failure, self._owner = await self._owner, None
                assert failure is not None  # the owner returns why a session never opened
                raise failure
            return self._client

    async def aclose(self) -> None:
        async with self._lock:
            await self._stop()

    async def _stop(self) -> None:
        if self._owner is not None:
            self._stopping = True
            self._wake.set()
            await self._owner
            self._owner, self._client = None, None

    async def _own(self, ready: asyncio.Event) -> MCPServerError | None:
        """Open, park, close. Never raises: a failure to start is returned, a later death reported."""
        error: Exception | None = None
        tail = b""
        try:
            # The server's stderr goes to a file, not our terminal; its tail explains failures.
            with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as errlog:
                try:
                    async with AsyncExitStack() as stack:
                        transport = _watched(await self._transport(stack, errlog), self._gone)
                        client = Client(transport, read_timeout_seconds=self._timeout, cache=None)
                        self._client = await stack.enter_async_context(client)
                        ready.set()
                        await self._wake.wait()
                finally:
                    size = os.fstat(errlog.fileno()).st_size
                    tail = os.pread(errlog.fileno(), _STDERR_TAIL, max(0, size - _STDERR_TAIL))
        except Exception as exc:
            error = exc
            self._gone()
        finally:
            ready.set()
        reason = _describe(error) if error else "the connection closed"
        stderr = tail.decode("utf-8", errors="replace").strip()
        reason += f"; stderr: {stderr}" if stderr else ""
        if self._client is None:
            return MCPServerError(
                f"MCP server {self.name!r} could not start: {reason}", server=self.name
            )
        if self._lost:
            message = (
                f"MCP server {self.name!r} went away ({reason}); it starts again on its next call"
            )
            await self._report(self.name, MCPServerError(message, server=self.name))
        return None

    def _gone(self) -> None:
        self._lost = self._lost or not self._stopping
        self._wake.set()

    async def _transport(self, stack: AsyncExitStack, errlog: TextIO) -> Transport:
        config = self.config
        if config.url is not None:
            headers = dict(config.headers)
            http = await stack.enter_async_context(create_mcp_http_client(headers=headers))
            return streamable_http_client(config.url, http_client=http)
        assert config.command is not None
        keep_process_private()  # a server, like any tool, must not read this process's keys
        command, args, cwd = config.command, list(config.args), config.cwd
        contained = self._containment
        if contained is not None and contained.refuses:
            raise MCPServerError(
                f"the world's sandbox setting is \"on\" and {contained.problem}", server=self.name
            )
        if contained is not None and contained.active:
            protected, private = self._kept
            command, *args = server_argv(
                config.command, config.args, env=config.env, cwd=config.cwd, status=contained,
                protected=protected, private=private,
            )
            cwd = None  # bubblewrap's --chdir
        parameters = StdioServerParameters(
            command=command, args=args, env=config.env or None, cwd=cwd
        )
        return stdio_client(parameters, errlog=errlog)

    @property
    def uncontained(self) -> str | None:
        """Why this server's tools run outside the world's sandbox, or None when they run in
        it wherever one can be made (``Tool.uncontained``)."""
        if self.config.url is not None:
            return "a remote MCP server (streamable HTTP): it runs outside this machine's sandbox"
        if not self.config.sandbox:
            return 'its MCP server is configured "sandbox": false'
        return None

    async def list_tools(self) -> list[MCPTool]:
        client = await self.client()
        tools: list[MCPTool] = []
        cursor: str | None = None
        for _ in range(_MAX_TOOL_PAGES):
            page = await client.list_tools(cursor=cursor)
            tools.extend(page.tools)
            if (cursor := page.next_cursor) is None:
                break
        return tools

    async def call(self, tool: str, arguments: dict[str, Any]) -> Any:
        client = await self.client()
        try:
            result = await client.call_tool(tool, arguments, read_timeout_seconds=self._timeout)
        except MCPError as exc:
            template = _CALL_FAILURES.get(exc.error.code, "rejected the call to {tool!r}: {detail}")
            detail = template.format(tool=tool, timeout=self._timeout, detail=exc.error.message)
            raise MCPServerError(f"MCP server {self.name!r} {detail}", server=self.name) from exc
        except Exception as exc:  # e.g. a result that does not fit the tool's output schema
            message = f"MCP server {self.name!r} failed the call to {tool!r}: {_describe(exc)}"
            raise MCPServerError(message, server=self.name) from exc
        if result.is_error:
            text = _content_text(result.content) or f"{tool!r} failed without a message"
            raise MCPServerError(text, server=self.name)
        return tool_result_value(result)


class MCPClients:
    """The MCP servers of one world runtime, offered as registry tools; an async context manager."""

    def __init__(
        self,
        configs: Iterable[MCPServerConfig],
        *,
        on_error: ErrorHandler | None = None,
        call_timeout: float = 60.0,
        containment: SandboxStatus | None = None,
        kept: KeptFiles = ((), ()),
    ) -> None:
        """``containment``: the world's sandbox, which stdio servers run in (SPEC C2); None
        runs them uncontained, as an embedding application that wants no sandbox may.
        ``kept``: the files a contained server may not change (policy files) and may not see
        (the database), should they lie in the working directory."""
        self._servers: dict[str, _Server] = {}
        for config in configs:
            if check_server_name(config.name) in self._servers:
                raise InvalidInputError(f"MCP server {config.name!r} is configured twice")
            self._servers[config.name] = _Server(
                config, timeout=call_timeout, report=self._report, containment=containment, kept=kept
            )
        self._on_error = on_error
        self._lock = asyncio.Lock()
        self._tools: list[Tool] | None = None

    async def __aenter__(self) -> MCPClients:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def tools(self) -> list[Tool]:
        """Every server's tools, namespaced. The first call starts all servers, concurrently."""
        async with self._lock:
            if self._tools is None:
                self._tools = await self._discover()
            return list(self._tools)

    async def aclose(self) -> None:
        """Close every session and end the server processes; a later ``tools()`` starts afresh."""
        async with self._lock, asyncio.TaskGroup() as group:
            self._tools = None
            for server in self._servers.values():
                group.create_task(server.aclose())

    async def _discover(self) -> list[Tool]:
        async def listing(server: _Server) -> list[MCPTool] | Exception:
            try:
                return await server.list_tools()
            except Exception as exc:  # reported below, in configuration order
                return exc

        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(listing(server)) for server in self._servers.values()]
        tools: list[Tool] = []
        for server, task in zip(self._servers.values(), tasks, strict=True):
            if isinstance(listed := task.result(), Exception):
                await self._report(server.name, listed)
                continue
            for spec in listed:
                if (refusal := self._refusal(server.name, spec.name, tools)) is not None:
                    await self._report(server.name, MCPServerError(refusal, server=server.name))
                else:
                    tools.append(_registry_tool(server, spec))
        return tools

    def _refusal(self, server: str, tool: str, accepted: list[Tool]) -> str | None:
        """Why a listed tool is not offered: it claims another server's prefix (P8), or repeats."""
        for other in self._servers:
            if other != server and tool.startswith(other + SEPARATOR):
                return (
                    f"MCP server {server!r} lists a tool named {tool!r}, which claims the prefix "
                    f"of server {other!r}; the tool is refused"
                )
        if any(existing.name == f"{server}{SEPARATOR}{tool}" for existing in accepted):
            return f"MCP server {server!r} lists the tool {tool!r} twice; the repeat is refused"
        return None

    async def _report(self, server: str, exc: Exception) -> None:
        if self._on_error is None:
            logger.warning("MCP server %r: %s", server, exc)
            return
        try:
            await self._on_error(server, exc)
        except Exception:
            logger.exception("the on_error handler failed for MCP server %r", server)


def _registry_tool(server: _Server, spec: MCPTool) -> Tool:
    async def run(arguments: dict[str, Any], context: ToolContext) -> Any:
        return await server.call(spec.name, arguments)

    hints = (
        spec.annotations.model_dump(by_alias=True, exclude_none=True) if spec.annotations else {}
    )
    annotations = {key: hints[key] for key in _HINTS if key in hints}
    if spec.title and "title" not in annotations:
        annotations["title"] = spec.title
    return Tool(
        name=f"{server.name}{SEPARATOR}{spec.name}",
        description=spec.description or spec.title or "",
        parameters=spec.input_schema,
        annotations=annotations,
        server=server.name,
        trusted=server.config.trust,
        uncontained=server.uncontained,
        run=run,
    )


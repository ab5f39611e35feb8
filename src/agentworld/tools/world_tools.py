"""Assemble one world's tool registry: built-ins, declared client tools, MCP servers (SPEC T1).

The registry is rebuilt from the world's stored settings on every loop
iteration — cheap, and a changed setting takes effect at once. MCP clients are
the expensive part, so they are kept and only replaced when the world's MCP
configuration changes. The ``mcp`` SDK is imported only for worlds that use it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING

from agentworld.models import World
from agentworld.tools.builtin.definitions import BUILTIN_TOOLS
from agentworld.tools.registry import Tool, ToolRegistry, client_tool

if TYPE_CHECKING:
    from agentworld.tools.mcp import MCPClients
    from agentworld.tools.sandbox import KeptFiles

ErrorReporter = Callable[[str, Exception], Awaitable[None]]


class WorldTools:
    def __init__(
        self,
        *,
        extra: Sequence[Tool] = (),
        on_mcp_error: ErrorReporter | None = None,
        kept: KeptFiles = ((), ()),
    ) -> None:
        self._extra = tuple(extra)
        """Server tools an embedding application defines in Python."""
        self._kept = kept
        """Files beyond the world's own policy files that contained MCP servers may not change
        (admin policy files) or see (the database)."""
        self._on_mcp_error = on_mcp_error
        self._mcp: MCPClients | None = None
        self._mcp_key: str | None = None

    async def registry(self, world: World) -> ToolRegistry:
        tools: list[Tool] = [*BUILTIN_TOOLS, *self._extra]
        tools.extend(client_tool(definition) for definition in world.client_tools)
        if world.mcp_config:
            clients = await self._clients(world)
            tools.extend(await clients.tools())
        elif self._mcp is not None:
            await self.aclose()
        return ToolRegistry(tools)

    async def _clients(self, world: World) -> MCPClients:
        """The world's MCP clients, started again when its MCP configuration, the sandbox its
        stdio servers run in (SPEC C2) or the files kept from them changes."""
        from agentworld.tools.mcp import MCPClients
        from agentworld.tools.mcp_config import parse_mcp_config
        from agentworld.tools.sandbox import sandbox_status

        assert world.mcp_config is not None
        contained = await asyncio.to_thread(
            sandbox_status, world.sandbox, world.network, world.working_dir
        )
        protected, private = self._kept
        kept: KeptFiles = ((*world.policy_files, *protected), private)
        key = json.dumps(
            [world.mcp_config, contained.mode, contained.active, contained.to_json(), kept], sort_keys=True
        )
        if self._mcp is None or key != self._mcp_key:
            await self.aclose()
            self._mcp = MCPClients(
                parse_mcp_config(world.mcp_config), on_error=self._on_mcp_error, containment=contained, kept=kept
            )
            self._mcp_key = key
        return self._mcp

    async def aclose(self) -> None:
        clients, self._mcp, self._mcp_key = self._mcp, None, None
        if clients is not None:
            await clients.aclose()

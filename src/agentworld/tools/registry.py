"""The tool registry (SPEC T1): what a world's agents may call, and where each tool runs.

A ``Tool`` is data: name, description, JSON-schema parameters, where it runs
(``server``: here; ``client``: in the connected client, which posts the result
later), approval settings, and MCP annotations when a server gave them. Server
tools carry the coroutine that runs them. One registry per world is assembled
from the built-ins, the world's MCP servers and its declared client tools.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from agentworld.errors import InvalidInputError
from agentworld.models.domain import NetworkMode, SandboxMode
from agentworld.providers.base import ToolSpec

if TYPE_CHECKING:
    from agentworld.approval.grants import PolicyState
    from agentworld.models import World
    from agentworld.models.pending import ShownFile
    from agentworld.tools.sandbox import SandboxStatus

ToolLocation = Literal["server", "client"]
ApprovalScope = Literal["once", "session", "always"]
CLIENT_PREFIX = "client."
"""Reserved for calls the system injects (``client.requestApproval``); never offered to a model."""


@dataclass(frozen=True, slots=True)
class ToolContext:
    """Where a call runs: which world, chat and agent, the world's working directory, the
    environment variables its tools may see and how its processes are contained."""

    world: str
    chat_id: str
    agent: str
    working_dir: str | None = None
    interactive: bool = True
    """False when nobody can answer an approval request now: ASK_USER becomes DENY (SPEC P2)."""
    tool_env: tuple[str, ...] = ()
    """Names of variables passed to tool processes besides the safe defaults (the world's
    ``tool_env``; see ``tools/environment.py``)."""
    policy: PolicyState | None = None
    """The world's settings and grants as the runtime read them just before this call (with
    its batch's call-id check, for the batch's first call), so the authorizer need not read
    them again; None: the authorizer reads them itself."""
    approval_id: str | None = None
    """The approval a person gave this very call, when it is authorized again just before it
    runs (SPEC C3): a DENY in force then still refuses it, and ASK_USER needs nobody more."""
    correcting: bool = False
    """With ``approval_id``: the call is a person's correction of the call they are approving,
    authorized as they answer (SPEC F2), not just before it runs."""
    sandbox: SandboxMode = "auto"
    """The world's ``sandbox`` setting (SPEC C1): whether tool processes run in bubblewrap."""
    network: NetworkMode = "deny"
    """The world's ``network`` setting: whether a contained process may reach the network."""
    protected: tuple[str, ...] = ()
    """Files a contained process may read but never change, even inside the working
    directory: the policy files that judge its calls."""
    private: tuple[str, ...] = ()
    """Files a contained process never sees, even inside the working directory: the database
    that records the world (its grants, every chat)."""
    shown_file: ShownFile | None = None
    """For an approved ``write_file`` / ``edit_file`` call: the file as the person was shown it
    (SPEC F1); the tool writes only if it is still exactly that. None: no check (a call the
    policy allowed without asking)."""

    def containment(self, tool: Tool | None = None) -> SandboxStatus:
        """What this call's processes get on this machine (``tools.sandbox.sandbox_status``;
        bubblewrap is probed once per process, on the first call that needs to know); for a
        ``tool`` that never runs in the sandbox, not contained and why."""
        from agentworld.tools.sandbox import sandbox_status  # only tools that start processes ask

        status = sandbox_status(self.sandbox, self.network, self.working_dir)
        if tool is not None and tool.uncontained is not None:
            return status.outside(tool.uncontained)
        return status

    async def containment_now(self, tool: Tool | None = None) -> SandboxStatus:
        """``containment``, in a worker thread only while bubblewrap is still to be probed (a
        subprocess, once per process), so a running event loop is never held up by it."""
        from agentworld.tools.sandbox import probed

        if self.sandbox == "off" or probed():
            return self.containment(tool)
        return await asyncio.to_thread(self.containment, tool)

    @classmethod
    def for_world(
        cls,
        world: World,
        *,
        chat_id: str,
        agent: str,
        interactive: bool = True,
        protected: Sequence[str] = (),
        private: Sequence[str] = (),
    ) -> ToolContext:
        """The context of a call in ``world``, with every world setting a tool needs;
        ``protected`` and ``private``: files beyond the world's own policy files that a
        contained process may not change (admin policy files) or see (the database)."""
        return cls(
            world=world.name,
            chat_id=chat_id,
            agent=agent,
            working_dir=world.working_dir,
            interactive=interactive,
            tool_env=tuple(world.tool_env),
            sandbox=world.sandbox,
            network=world.network,
            protected=(*world.policy_files, *protected),
            private=tuple(private),
        )


@dataclass(frozen=True, slots=True)
class ApprovalSettings:
    required: bool = False
    scope: ApprovalScope = "once"
    message: str | None = None
    """A template shown to the person asked, e.g. ``"Run {command}?"``."""


@dataclass(frozen=True, slots=True)
class FilePreview:
    """The change a file tool's call would make, as a person approves it (SPEC F1): the
    unified diff, and the file as it is now (its resolved path and the SHA-256 of its bytes)."""

    diff: str
    file: ShownFile


ToolRunner = Callable[[dict[str, Any], ToolContext], Awaitable[Any]]
"""Runs a server tool: validated arguments in, a JSON-able value (or text) out; raises on failure."""


@dataclass(frozen=True, slots=True)
class Tool:
    name: str
    description: str
    parameters: dict[str, Any] = field(
        default_factory=lambda: {"type": "object", "properties": {}}
    )
    location: ToolLocation = "server"
    approval: ApprovalSettings = ApprovalSettings()
    annotations: dict[str, Any] = field(default_factory=dict)
    """MCP hints (readOnlyHint, destructiveHint, ...) when the server gave them."""
    server: str | None = None
    """The MCP server the tool belongs to (its name is ``server__tool``)."""
    precheck: Callable[[dict[str, Any], ToolContext], str | None] | None = None
    """Why valid arguments still cannot run here (``shell_cmd``: a directory outside the
    working directory), checked before the policy so nobody is asked to approve a call
    that would be refused anyway; None when they can."""
    preview: Callable[[dict[str, Any], ToolContext], FilePreview] | None = None
    """The change the call would make, shown with its approval request (``write_file``,
    ``edit_file``); raises when it cannot be made. None: the tool changes no file it can show."""
    trusted: bool = False
    """Its MCP server is marked ``"trust": true`` by the world's owner: it runs without asking
    unless a policy rule says otherwise (other MCP tools ask unless they are read-only)."""
    uncontained: str | None = None
    """Why this tool's calls never run in the world's sandbox (SPEC C1, C2), or None when they
    do where one can be made: shown in every approval of it."""
    asks_person: bool = False
    """A call of it is a question to a person (``ask_user``): it never runs; the loop waits,
    durably, for the answer, which becomes the call's result (``runtime/questions.py``)."""
    run: ToolRunner | None = None

    def spec(self) -> ToolSpec:
        return ToolSpec(name=self.name, description=self.description, parameters=self.parameters)


def client_tool(definition: dict[str, Any]) -> Tool:
    """A client-side tool from its declaration in world settings (name, description, parameters)."""
    name = str(definition.get("name", ""))
    if not name or name.startswith(CLIENT_PREFIX):
        raise InvalidInputError(
            f"client tool name {name!r} is empty or uses the reserved prefix {CLIENT_PREFIX!r}"
        )
    approval = definition.get("approval") or {}
    return Tool(
        name=name,
        description=str(definition.get("description", "")),
        parameters=definition.get("parameters") or {"type": "object", "properties": {}},
        location="client",
        approval=ApprovalSettings(**approval),
        uncontained="a client tool: it runs in the client application",
    )


class ToolRegistry:
    """The tools of one world, by name; later registrations never silently replace earlier ones."""

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        self._specs: tuple[ToolSpec, ...] | None = None
        """What ``specs`` returns, made once per set of tools: every model request offers them."""
        for tool in tools:
            self.add(tool)

    def add(self, tool: Tool) -> None:
        if tool.name in self._tools:
            raise InvalidInputError(f"tool {tool.name!r} is registered twice")
        if tool.name.startswith(CLIENT_PREFIX):
            raise InvalidInputError(f"tool names starting with {CLIENT_PREFIX!r} are reserved")
        self._tools[tool.name] = tool
        self._specs = None

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Any:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    def specs(self) -> Sequence[ToolSpec]:
        if self._specs is None:
            self._specs = tuple(tool.spec() for tool in self._tools.values())
        return self._specs

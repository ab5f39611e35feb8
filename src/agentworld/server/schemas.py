"""The HTTP API's bodies and documents as pydantic models: requests are checked against them
(SPEC: pydantic at trust boundaries), and the OpenAPI schema is generated from them, so the
contract cannot drift from the code. Documents are built by ``agentworld.documents`` — the
same functions the CLI's ``--json`` uses — and these models only describe them."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agentworld.models import Agent, Chat, Message, World
from agentworld.models.domain import ProviderName

_BODY = ConfigDict(extra="forbid", populate_by_name=True)


# -- requests ----------------------------------------------------------------------------------


class _Settings(BaseModel):
    """A body that changes some settings of a world or an agent: the settings it leaves out
    stay as they are, so what counts is which fields were sent, not their defaults."""

    model_config = _BODY

    def changes(self) -> dict[str, Any]:
        """The settings given, by their Python names (what ``AgentWorld`` takes)."""
        return self.model_dump(exclude_unset=True, exclude={"name"})


class WorldSettings(_Settings):
    """World settings, as in the world document; only those given are set."""

    description: str | None = None
    turn_limit: int | None = Field(default=None, alias="turnLimit")
    max_iterations: int | None = Field(default=None, alias="maxIterations")
    approval_timeout: float | None = Field(default=None, alias="approvalTimeout")
    streaming: bool | None = None
    non_interactive: bool | None = Field(default=None, alias="nonInteractive")
    main_agent: str | None = Field(default=None, alias="mainAgent")
    working_dir: str | None = Field(default=None, alias="workingDir")
    policy_files: list[str] | None = Field(default=None, alias="policyFiles")
    policy_mode: Literal["default", "auto_edit", "yolo"] | None = Field(default=None, alias="policyMode")
    allowed_tools: list[str] | None = Field(default=None, alias="allowedTools")
    excluded_tools: list[str] | None = Field(default=None, alias="excludedTools")
    mcp_config: dict[str, Any] | None = Field(default=None, alias="mcpConfig")
    hooks: list[str] | None = None
    client_tools: list[dict[str, Any]] | None = Field(default=None, alias="clientTools")
    tool_env: list[str] | None = Field(default=None, alias="toolEnv")


class WorldCreate(WorldSettings):
    name: str


class AgentSettings(_Settings):
    """Agent settings, as in the agent document; only those given are set."""

    provider: ProviderName | None = None
    model: str | None = None
    base_url: str | None = Field(default=None, alias="baseUrl")
    api_key_env: str | None = Field(default=None, alias="apiKeyEnv")
    system_prompt: str | None = Field(default=None, alias="systemPrompt")
    temperature: float | None = None
    max_tokens: int | None = Field(default=None, alias="maxTokens")


class AgentCreate(AgentSettings):
    name: str
    provider: ProviderName
    model: str


class ChatChange(BaseModel):
    """Rename a chat, or make it the world's current chat."""

    model_config = _BODY

    name: str | None = None
    current: Literal[True] | None = None


class MessagePost(BaseModel):
    model_config = _BODY

    text: str
    sender: str = "human"


class ApprovalAnswer(BaseModel):
    """A person's structured decision (SPEC A2), never text typed into the chat."""

    model_config = _BODY

    decision: Literal["approve", "deny"]
    scope: Literal["once", "session", "always"] = "once"


class ToolResultPost(BaseModel):
    """The result of a client-side tool call (SPEC T4): any JSON value."""

    model_config = _BODY

    result: Any = None
    is_error: bool = Field(default=False, alias="isError")


class PolicyTest(BaseModel):
    """One tool call to decide as the world's runtime would (``policy test WORLD``)."""

    model_config = _BODY

    tool: str
    args: dict[str, Any] = Field(default_factory=dict)
    server: str | None = None
    mode: Literal["default", "auto_edit", "yolo"] | None = None
    non_interactive: bool = Field(default=False, alias="nonInteractive")
    agent: str | None = None
    chat: str | None = None


# -- documents ---------------------------------------------------------------------------------


class _Doc(BaseModel):
    model_config = ConfigDict(populate_by_name=True)


class Health(_Doc):
    status: Literal["ok"]


class ErrorBody(_Doc):
    code: str
    message: str


class ErrorDoc(_Doc):
    error: ErrorBody


class UsageDoc(_Doc):
    input_tokens: int = Field(alias="inputTokens")
    output_tokens: int = Field(alias="outputTokens")


class AgentDoc(Agent):
    usage: UsageDoc | None = None


class ChatDoc(Chat):
    usage: UsageDoc


class WorldList(_Doc):
    worlds: list[World]


class AgentList(_Doc):
    agents: list[AgentDoc]


class ChatList(_Doc):
    chats: list[ChatDoc]


class ChatCreated(_Doc):
    chat_id: str = Field(alias="chatId")


class MessagePage(_Doc):
    messages: list[Message]
    next_after: int = Field(
        alias="nextAfter", description="Give as ?after= for the next page (a transcript position)."
    )
    last_event_id: int = Field(
        alias="lastEventId",
        description="The world's event-log position when this page was read: follow the event "
        "stream from here (Last-Event-ID) to miss nothing that came after.",
    )


class MemoryDoc(_Doc):
    agent: str
    chat_id: str | None = Field(alias="chatId")
    messages: list[Message]


class Posted(_Doc):
    chat_id: str = Field(alias="chatId")
    message_id: str = Field(alias="messageId")


class ApprovalDoc(_Doc):
    approval_id: str = Field(alias="approvalId")
    agent: str
    chat_id: str = Field(alias="chatId")
    tool_name: str = Field(alias="toolName")
    tool_args: dict[str, Any] = Field(alias="toolArgs")
    message: str
    created_at: str | None = Field(alias="createdAt")


class ApprovalList(_Doc):
    approvals: list[ApprovalDoc]


class RunDoc(_Doc):
    chat_id: str = Field(alias="chatId")
    messages: list[Message]
    pending_approvals: list[ApprovalDoc] = Field(alias="pendingApprovals")


class PendingCallDoc(_Doc):
    tool_call_id: str = Field(alias="toolCallId")
    agent: str
    chat_id: str = Field(alias="chatId")
    tool_name: str = Field(alias="toolName")
    tool_args: dict[str, Any] = Field(alias="toolArgs")
    created_at: str | None = Field(alias="createdAt")


class PendingCallList(_Doc):
    pending_tool_calls: list[PendingCallDoc] = Field(alias="pendingToolCalls")


class GrantDoc(_Doc):
    grant_id: str = Field(alias="grantId")
    scope: str
    tool_name: str = Field(alias="toolName")
    agent: str | None
    chat_id: str | None = Field(alias="chatId")
    root_commands: list[str] | None = Field(alias="rootCommands")
    approval_id: str | None = Field(alias="approvalId")
    created_at: str | None = Field(alias="createdAt")


class GrantList(_Doc):
    grants: list[GrantDoc]


class RuleList(_Doc):
    rules: list[dict[str, Any]]


class Verdict(_Doc):
    decision: Literal["ALLOW", "DENY", "ASK_USER"]
    rule: dict[str, Any] | None
    reason: str | None = None
    by: str | None = None
    grant: str | None = None


class AuditList(_Doc):
    audit: list[dict[str, Any]]


class ToolLogList(_Doc):
    tool_logs: list[dict[str, Any]] = Field(alias="toolLogs")


class ToolDoc(_Doc):
    name: str
    description: str
    location: Literal["server", "client"]
    server: str | None
    approval: dict[str, Any]
    annotations: dict[str, Any] | None
    parameters: dict[str, Any]


class ToolList(_Doc):
    tools: list[ToolDoc]


ChatState = Literal["running", "queued", "waiting", "idle"]


class ChatStatus(_Doc):
    chat_id: str = Field(alias="chatId")
    name: str
    state: ChatState = Field(
        description="running: a process holds the chat and works on it; queued: it has work "
        "that no process runs yet; waiting: only approvals or client tool results are awaited; "
        "idle: nothing to do."
    )
    queued_items: int = Field(alias="queuedItems")
    runner: str | None = Field(description="host:pid:start of the process running it")
    pending_approvals: int = Field(alias="pendingApprovals")
    pending_tool_calls: int = Field(alias="pendingToolCalls")


class WorldStatus(_Doc):
    world: str
    chats: list[ChatStatus]


class ResumeDoc(_Doc):
    world: str
    chats: list[RunDoc]


class StopDoc(_Doc):
    """What a stop did: ``stopped`` is false when the chat had nothing running here (or
    another process runs it: stop it there)."""

    chat_id: str = Field(alias="chatId")
    stopped: bool
    dropped: int
    interrupted: list[str]
    skipped: list[str]

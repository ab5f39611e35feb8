"""Worlds, agents and chats (SPEC W1)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import datetime
from typing import Any, Literal, get_args
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator

from agentworld.models.message import utc_now
from agentworld.models.settings import (
    DEFAULT_MODEL_DEADLINE_SECONDS,
    MAX_MODEL_DEADLINE_SECONDS,
    parse_tool_selector,
    validate_tool_env,
)

ProviderName = Literal[
    "openai", "anthropic", "google", "azure", "ollama", "xai", "openai-compatible", "scripted"
]
PROVIDER_NAMES: tuple[str, ...] = get_args(ProviderName)
SandboxMode = Literal["auto", "on", "off"]
NetworkMode = Literal["deny", "allow"]

_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]{0,63}")
MAX_APPROVAL_TIMEOUT = 365 * 24 * 3600.0
DEFAULT_MEMORY_WINDOW = 500
MIN_MEMORY_WINDOW = 20
MAX_MEMORY_WINDOW = 1_000_000
RESERVED_NAMES = frozenset({"human", "user", "you", "system", "world"})
"""Senders with a meaning of their own in routing (SPEC R2); no agent may take one (any case)."""


def name_problem(value: str) -> str | None:
    """Why ``value`` cannot be a world, agent or sender name, or None when it can.

    Names double as @mention handles, so they use the mention alphabet (SPEC R1). They are
    compared without regard to case: ``Planner`` and ``planner`` are one name.
    """
    if not _NAME.fullmatch(value):  # fullmatch: "$" would let a trailing newline through
        return "use 1-64 letters, digits, '_' or '-', not starting with '-'"
    return None


def agent_name_problem(value: str) -> str | None:
    """Why ``value`` cannot name a new agent: the name rules, and no reserved sender name."""
    if (problem := name_problem(value)) is not None:
        return problem
    if value.lower() in RESERVED_NAMES:
        return "it is reserved: human, user, you, system and world are senders with their own meaning"
    return None


def sender_problem(sender: str, agents: Iterable[str]) -> str | None:
    """Why a message cannot be published as from ``sender``, or None when it can.

    A sender follows the name rules (one line, the mention alphabet) and cannot pose as one of
    the world's ``agents``: an agent never answers its own name, and auto-mentions would make
    the agents address a person as if it were one of them (SPEC R2, R3).
    """
    if "\n" in sender or "\r" in sender:
        return "it must be one line"
    if (problem := name_problem(sender)) is not None:
        return problem
    if any(sender.lower() == agent.lower() for agent in agents):
        return "it names an agent of this world, and a message cannot pose as an agent"
    return None


def base_url_problem(url: str) -> str | None:
    """Why ``url`` cannot be an agent's endpoint (``--base-url``), or None when it can."""
    if url != url.strip() or any(c.isspace() for c in url):
        return "contains whitespace"
    if "[REDACTED" in url:  # copied from a document or a log, where a password is masked
        return "holds a mask shown in place of a password ([REDACTED:…]): give the password itself"
    try:
        parts = urlsplit(url)
    except ValueError:  # an unclosed or malformed ``[IPv6]`` host
        return "is not a URL (its host is malformed)"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "is not an http:// or https:// URL with a host"
    try:
        parts.port  # noqa: B018 - parsing the port is the check
    except ValueError:
        return "has an invalid port"
    return None


def _check_name(value: str) -> str:
    if (problem := name_problem(value)) is not None:
        raise ValueError(f"invalid name {value!r}: {problem}")
    return value


class World(BaseModel):
    # Frozen: a world read from storage is shared by every reader of the same stored settings
    # (``storage.rows.world_record``); a change is a copy (``model_copy``) that gets stored.
    model_config = ConfigDict(populate_by_name=True, frozen=True)

    name: str
    description: str = ""
    turn_limit: int = Field(default=5, ge=1, alias="turnLimit")
    max_iterations: int = Field(default=10, ge=1, alias="maxIterations")
    approval_timeout: float = Field(
        default=300.0, gt=0, le=MAX_APPROVAL_TIMEOUT, allow_inf_nan=False, alias="approvalTimeout"
    )
    """Seconds before an unanswered approval is denied (SPEC A7): finite, above zero, at most a
    year (``inf`` or ``1e400`` would be stored and then break every approval listing)."""
    streaming: bool = True
    non_interactive: bool = Field(default=False, alias="nonInteractive")
    """Nobody answers approvals in this world: calls that need one are denied (SPEC P2)."""
    main_agent: str | None = Field(default=None, alias="mainAgent")
    current_chat_id: str | None = Field(default=None, alias="currentChatId")
    working_dir: str | None = Field(default=None, alias="workingDir")
    worker_queue: str | None = Field(default=None, alias="workerQueue", min_length=1, max_length=200)
    """On Temporal (SPEC S1): the task queue whose workers hold the world's working directory;
    its chats' work runs there (``agentworld worker --queue``). None: the deployment's queue."""
    policy_files: list[str] = Field(default_factory=list, alias="policyFiles")
    policy_rules: list[dict[str, Any]] = Field(default_factory=list, alias="policyRules")
    """The world's own policy rules, each a table as a policy file's ``[[rule]]`` holds it:
    tier 2, read before the world's policy files (``runtime.authorizer.load_rules``)."""
    policy_mode: Literal["default", "auto_edit", "yolo"] = Field(default="default", alias="policyMode")
    allowed_tools: list[str] = Field(default_factory=list, alias="allowedTools")
    """Legacy setting: these tools are allowed (an ALLOW rule at 2.3, SPEC P5)."""
    excluded_tools: list[str] = Field(default_factory=list, alias="excludedTools")
    """Legacy setting: these tools are denied (a DENY rule at 2.4, SPEC P5)."""
    mcp_config: dict[str, Any] | None = Field(default=None, alias="mcpConfig")
    hooks: list[str] = Field(default_factory=list)
    """``on_event`` hooks by import path (``package.module:function``), loaded by any process."""
    client_tools: list[dict[str, Any]] = Field(default_factory=list, alias="clientTools")
    """Declarations of tools the connected client runs (name, description, parameters)."""
    tool_env: list[str] = Field(default_factory=list, alias="toolEnv")
    """Environment variables passed to tool processes besides the safe defaults; listing a
    provider key here is the owner's explicit choice (``tools/environment.py``)."""
    sandbox: SandboxMode = "auto"
    """Whether shell commands and stdio MCP servers run contained (SPEC C1): ``auto`` where a
    sandbox can be made (else uncontained, with a warning), ``on`` (refuse to run them
    without one), ``off``."""
    network: NetworkMode = "deny"
    """Whether a contained command may reach the network (SPEC C1)."""
    budget: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    """USD a chat may cost (its recorded model calls); reached, agents hand back to the people
    rather than call a model (SPEC O2). None: no budget."""
    created_at: datetime = Field(default_factory=utc_now, alias="createdAt")
    updated_at: datetime = Field(default_factory=utc_now, alias="updatedAt")

    @field_validator("name")
    @classmethod
    def _valid_name(cls, value: str) -> str:
        return _check_name(value)

    @field_validator("allowed_tools", "excluded_tools")
    @classmethod
    def _valid_tool_names(cls, value: list[str]) -> list[str]:
        for name in value:  # the toolName wildcards: "*", "read_*"; a star elsewhere is refused
            parse_tool_selector(name)
        return value

    @field_validator("tool_env")
    @classmethod
    def _valid_tool_env(cls, value: list[str]) -> list[str]:
        return validate_tool_env(value)


class Agent(BaseModel):
    # Frozen, as worlds are: readers share the settings validated once (``storage.rows``).
    model_config = ConfigDict(populate_by_name=True, frozen=True)

    world: str
    name: str
    provider: ProviderName
    model: str
    system_prompt: str = Field(default="", alias="systemPrompt")
    temperature: float | None = Field(default=None, ge=0, le=2, allow_inf_nan=False)
    max_tokens: int | None = Field(default=None, ge=1, alias="maxTokens")
    base_url: str | None = Field(default=None, alias="baseUrl")
    api_key_env: str | None = Field(default=None, alias="apiKeyEnv")
    memory_window: int = Field(
        default=DEFAULT_MEMORY_WINDOW, ge=0, le=MAX_MEMORY_WINDOW, alias="memoryWindow"
    )
    """How many of its latest memory messages of the chat the agent is shown (0: all of
    them). All are kept; a bounded prompt keeps a long chat within the model's context and
    lets a fresh process read only the tail (``runtime.llm_input.memory_window``)."""
    model_deadline_seconds: int = Field(
        default=DEFAULT_MODEL_DEADLINE_SECONDS,
        ge=1,
        le=MAX_MODEL_DEADLINE_SECONDS,
        alias="modelDeadlineSeconds",
    )
    """How long one model call may take in all, retries and their waits included; past it the
    turn ends with a system event saying the model did not answer (``RetryingProvider``)."""
    price_in: float | None = Field(default=None, ge=0, allow_inf_nan=False, alias="priceIn")
    """USD per million input tokens, in place of the shipped price table's (SPEC O2)."""
    price_out: float | None = Field(default=None, ge=0, allow_inf_nan=False, alias="priceOut")
    """USD per million output tokens, in place of the shipped price table's."""
    budget: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    """USD this agent's calls may cost in one chat, besides the world's budget for the chat."""
    status: Literal["active", "inactive"] = "active"
    llm_call_count: int = Field(default=0, alias="llmCallCount")
    last_active: datetime | None = Field(default=None, alias="lastActive")
    created_at: datetime = Field(default_factory=utc_now, alias="createdAt")

    @field_validator("name")
    @classmethod
    def _valid_name(cls, value: str) -> str:
        return _check_name(value)

    @field_validator("memory_window")
    @classmethod
    def _whole_or_enough(cls, value: int) -> int:
        # A window must hold a tool batch with its results, or the loop could not see the
        # calls a stopped process cut short.
        if 0 < value < MIN_MEMORY_WINDOW:
            raise ValueError(f"use 0 (the whole memory) or at least {MIN_MEMORY_WINDOW} messages")
        return value


class BranchOf(BaseModel):
    """Where a branch was made from (SPEC K1): the chat, and the message it was copied up to."""

    model_config = ConfigDict(populate_by_name=True, frozen=True)

    chat_id: str = Field(alias="chatId")
    message_id: str = Field(alias="messageId")


class Chat(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    world: str
    chat_id: str = Field(alias="chatId")
    name: str = "New chat"
    created_at: datetime = Field(default_factory=utc_now, alias="createdAt")
    updated_at: datetime = Field(default_factory=utc_now, alias="updatedAt")
    message_count: int = Field(default=0, alias="messageCount")
    branch_of: BranchOf | None = Field(default=None, alias="branchOf")
    """The chat and message this chat was branched from; None for a chat that is no branch."""

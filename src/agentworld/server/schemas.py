"""The HTTP API's bodies and documents as pydantic models: requests are checked against them
(SPEC: pydantic at trust boundaries), and the OpenAPI schema is generated from them, so the
contract cannot drift from the code. Documents are built by ``agentworld.documents`` — the
same functions the CLI's ``--json`` uses — and these models only describe them."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

from agentworld.models import Agent, Chat, Message, World
from agentworld.models.domain import NetworkMode, ProviderName, SandboxMode
from agentworld.models.text import NUL, lone_surrogate_at

_BODY = ConfigDict(extra="forbid", populate_by_name=True, alias_generator=to_camel, strict=True)
"""Requests, like documents, name their fields in camelCase (``turn_limit`` is ``turnLimit``):
stated once here and in ``_Doc``, so no field spells its JSON name by hand. Strict: a value
of the wrong JSON type is refused, not converted (``"turnLimit": true`` is not 1, ``"streaming":
"no"`` is not false); only an integer where a number is asked is taken as it is."""


# -- requests ----------------------------------------------------------------------------------

class _Body(BaseModel):
    """A request body: camelCase names, unknown fields refused, and only real text in it."""

    model_config = _BODY

    @field_validator("*", mode="before")
    @classmethod
    def _only_text(cls, value: Any) -> Any:
        """Checked before anything else, so a refused body names the field and stores
        nothing (every string of every field, keys of objects included)."""
        where = lone_surrogate_at(value)
        if where is not None:
            at = f" at {where}" if where else ""
            raise PydanticCustomError(
                "invalid_text",
                "holds a lone surrogate{at} (a \\uD800-\\uDFFF escape that is not half of a "
                "pair), which is not text: send valid Unicode",
                {"at": at},
            )
        return value


class _Changes(_Body):
    """A body that changes some settings: the settings it leaves out stay as they are, so what
    counts is which fields were sent, not their defaults. ``null`` clears a setting that may be
    empty (``CLEARED_BY_NULL``: an agent's ``temperature``, a world's ``mainAgent``); for any
    other it is a value of the wrong JSON type, refused (422) like ``"turnLimit": true`` --
    and the published schema does not offer it (``_null_where_it_clears``)."""

    model_config = ConfigDict(**_BODY, json_schema_extra=lambda schema, cls: _null_where_it_clears(schema, cls))
    CLEARED_BY_NULL: ClassVar[frozenset[str]] = frozenset()

    @field_validator("*", mode="before")
    @classmethod
    def _null_only_where_it_clears(cls, value: Any, info: ValidationInfo) -> Any:
        if value is None and info.field_name not in cls.CLEARED_BY_NULL:
            raise PydanticCustomError(
                "null_refused", "null is not a value here: leave the field out to keep it as it is"
            )
        return value

    def changes(self) -> dict[str, Any]:
        """The settings given, by their Python names (what ``AgentWorld`` takes)."""
        return self.model_dump(exclude_unset=True, exclude={"name"})


def _null_where_it_clears(schema: dict[str, Any], model: type[BaseModel]) -> None:
    """The JSON schema of a ``_Changes`` body: its fields are typed ``X | None`` (None: not
    sent), but ``null`` is offered only for those it clears."""
    cleared: frozenset[str] = getattr(model, "CLEARED_BY_NULL", frozenset())
    properties = schema.get("properties", {})
    for name, field in model.model_fields.items():
        found = properties.get(field.alias or name, {})
        branches = found.get("anyOf", [])
        if name not in cleared and {"type": "null"} in branches:
            kept = [b for b in branches if b != {"type": "null"}]
            del found["anyOf"]
            found.update(kept[0] if len(kept) == 1 else {"anyOf": kept})


class WorldSettings(_Changes):
    """World settings, as in the world document; only those given are set."""

    CLEARED_BY_NULL = frozenset({"main_agent", "working_dir", "mcp_config", "worker_queue", "budget"})

    description: str | None = None
    turn_limit: int | None = None
    max_iterations: int | None = None
    approval_timeout: float | None = None
    streaming: bool | None = None
    non_interactive: bool | None = None
    main_agent: str | None = None
    working_dir: str | None = None
    worker_queue: str | None = None
    """On Temporal: the task queue of the workers that hold the working directory (SPEC S1)."""
    policy_files: list[str] | None = None
    policy_rules: list[dict[str, Any]] | None = None
    """The world's own policy rules: tables with a policy file's rule keys (docs/policy.md)."""
    policy_mode: Literal["default", "auto_edit", "yolo"] | None = None
    allowed_tools: list[str] | None = None
    excluded_tools: list[str] | None = None
    mcp_config: dict[str, Any] | None = None
    hooks: list[str] | None = None
    client_tools: list[dict[str, Any]] | None = None
    tool_env: list[str] | None = None
    sandbox: SandboxMode | None = None
    """Run shell commands and stdio MCP servers in a sandbox: auto | on | off (SPEC C1)."""
    network: NetworkMode | None = None
    """Whether sandboxed commands reach the network: deny | allow."""
    budget: float | None = None
    """USD a chat may cost before agents hand back to the people (SPEC O2); null: none."""


class WorldCreate(WorldSettings):
    name: str


class AgentSettings(_Changes):
    """Agent settings, as in the agent document; only those given are set."""

    CLEARED_BY_NULL = frozenset(
        {"base_url", "api_key_env", "temperature", "max_tokens", "price_in", "price_out", "budget"}
    )

    provider: ProviderName | None = None
    model: str | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    system_prompt: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    memory_window: int | None = None
    model_deadline_seconds: int | None = None
    price_in: float | None = None
    """USD per million input tokens, in place of the shipped price table's."""
    price_out: float | None = None
    """USD per million output tokens, in place of the shipped price table's."""
    budget: float | None = None
    """USD this agent's calls may cost in one chat; null: none."""


class AgentCreate(AgentSettings):
    name: str
    provider: ProviderName
    model: str


class ChatChange(_Changes):
    """Rename a chat, or make it the world's current chat."""

    name: str | None = None
    current: Literal[True] | None = None


class MessageEdit(_Body):
    """A person's message replaced by ``text`` (SPEC K2)."""

    text: str

    @field_validator("text")
    @classmethod
    def _no_nul(cls, value: str) -> str:
        """A NUL is refused like a lone surrogate, naming the field: one backend could store it
        and the other not (``models.text``)."""
        if NUL in value:
            raise PydanticCustomError(
                "invalid_text", "holds a NUL character (\\u0000), which a message cannot hold"
            )
        return value


class ChatBranch(_Body):
    """Branch a chat from one of its messages (SPEC K1)."""

    message_id: str


class MessagePost(MessageEdit):
    sender: str = "human"


class ApprovalAnswer(_Body):
    """A person's structured decision (SPEC A2), never text typed into the chat."""

    decision: Literal["approve", "deny"]
    scope: Literal["once", "session", "always"] = "once"
    args: dict[str, Any] | None = Field(
        default=None,
        description=(
            "Approve the call with these arguments instead of the model's (SPEC F2): checked "
            "against the tool (422 invalid_input) and authorized afresh (403 denied_by_policy) "
            "before anything is answered; only with decision approve."
        ),
    )


class QuestionAnswer(_Body):
    """A person's answer to a question an agent asked (SPEC F3): the text that becomes the
    ``ask_user`` call's result (one of the options, as written, when only they are taken)."""

    answer: str


class ToolResultPost(_Body):
    """The result of a client-side tool call (SPEC T4): any JSON value."""

    result: Any = None
    is_error: bool = False


class PolicyTest(_Body):
    """One tool call to decide as the world's runtime would (``policy test WORLD``)."""

    tool: str
    args: dict[str, Any] = Field(default_factory=dict)
    server: str | None = None
    mode: Literal["default", "auto_edit", "yolo"] | None = None
    non_interactive: bool = False
    agent: str | None = None
    chat: str | None = None


# -- documents ---------------------------------------------------------------------------------


class _Doc(BaseModel):
    model_config = ConfigDict(populate_by_name=True, alias_generator=to_camel)


class Health(_Doc):
    status: Literal["ok"]


class ErrorBody(_Doc):
    code: str
    message: str


class ErrorDoc(_Doc):
    error: ErrorBody


class UsageDoc(_Doc):
    input_tokens: int
    output_tokens: int
    cost_usd: float | None = Field(
        default=None,
        description="USD of the calls whose cost is known (0 with no calls); null when no call had a price.",
    )
    unpriced_calls: int | None = Field(
        default=None, description="Calls whose cost is unknown, left out of costUsd."
    )


class UsageTotal(_Doc):
    calls: int
    input_tokens: int
    output_tokens: int
    cost_usd: float | None = Field(
        description="USD of the calls whose cost is known (recorded at the prices of the day); "
        "0 with no calls, null when no call had a price."
    )
    unpriced_calls: int = Field(description="Calls whose cost is unknown, left out of costUsd.")


class AgentUsage(UsageTotal):
    agent: str


class ChatUsage(UsageTotal):
    chat_id: str


class ModelUsage(UsageTotal):
    model: str | None = Field(description="The model called; null for calls stored before models were.")


class UsageReport(_Doc):
    """``agentworld usage --json``: the agents' model calls in total and by agent, chat and model."""

    world: str
    chat_id: str | None
    prices_as_of: str = Field(description="The day of the shipped price table's prices.")
    total: UsageTotal
    by_agent: list[AgentUsage]
    by_chat: list[ChatUsage]
    by_model: list[ModelUsage]


class AgentDoc(Agent):
    usage: UsageDoc | None = None


class ChatDoc(Chat):
    usage: UsageDoc
    current: bool = Field(description="Whether this is the world's current chat.")


class WorldList(_Doc):
    worlds: list[World]


class AgentList(_Doc):
    agents: list[AgentDoc]


class ChatList(_Doc):
    chats: list[ChatDoc]


class ChatCreated(_Doc):
    chat_id: str


class MessagePage(_Doc):
    messages: list[Message]
    next_after: int = Field(
        description="Give as ?after= for the next page (a transcript position)."
    )
    last_event_id: int = Field(
        description="The world's event-log position when this page was read: follow the event "
        "stream from here (Last-Event-ID) to miss nothing that came after.",
    )


class MemoryDoc(_Doc):
    agent: str
    chat_id: str | None
    messages: list[Message]


class Posted(_Doc):
    chat_id: str
    message_id: str


class SandboxDoc(_Doc):
    """Where an approved call runs (SPEC C1): contained or not, where it can write, whether it
    reaches the network — as the person was shown when asked."""

    active: bool
    writable: list[str]
    network: NetworkMode


class ApprovalDoc(_Doc):
    approval_id: str
    agent: str
    chat_id: str
    tool_name: str
    tool_args: dict[str, Any]
    message: str
    created_at: str | None
    sandbox: SandboxDoc


class ApprovalList(_Doc):
    approvals: list[ApprovalDoc]


class QuestionDoc(_Doc):
    question_id: str
    agent: str
    chat_id: str
    question: str
    options: list[str]
    allow_free_text: bool
    created_at: str | None


class QuestionList(_Doc):
    questions: list[QuestionDoc]


class RunDoc(_Doc):
    chat_id: str
    messages: list[Message]
    pending_approvals: list[ApprovalDoc]
    pending_questions: list[QuestionDoc]


class PendingCallDoc(_Doc):
    tool_call_id: str
    agent: str
    chat_id: str
    tool_name: str
    tool_args: dict[str, Any]
    created_at: str | None


class PendingCallList(_Doc):
    pending_tool_calls: list[PendingCallDoc]


class GrantDoc(_Doc):
    grant_id: str
    scope: str
    tool_name: str
    agent: str | None
    chat_id: str | None
    root_commands: list[str] | None
    redirect_targets: list[str] | None
    approval_id: str | None
    created_at: str | None


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
    tool_logs: list[dict[str, Any]]


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
    chat_id: str
    name: str
    state: ChatState = Field(
        description="running: a process holds the chat and works on it; queued: it has work "
        "that no process runs yet; waiting: only approvals, answers to questions or client tool "
        "results are awaited; "
        "idle: nothing to do."
    )
    queued_items: int
    runner: str | None = Field(description="host:pid:start of the process running it")
    pending_approvals: int
    pending_tool_calls: int
    pending_questions: int


class WorldStatus(_Doc):
    world: str
    chats: list[ChatStatus]


class ResumeDoc(_Doc):
    world: str
    chats: list[RunDoc]


class StopDoc(_Doc):
    """What a stop did: ``stopped`` is false when the chat had nothing running here (or
    another process runs it: stop it there)."""

    chat_id: str
    stopped: bool
    dropped: int
    interrupted: list[str]
    """Calls that had started and were cancelled."""
    killed: list[str] = []
    """Those of ``interrupted`` whose processes were killed, with every process they started."""
    skipped: list[str]

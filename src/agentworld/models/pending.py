"""Tool calls that wait for something outside the agent loop (SPEC T4, A1).

A waiting call is one of three cases, told apart by ``kind``:

- ``PendingClientCall``: a call of a client-side tool, waiting for the client to post its
  result (SPEC T4). It carries nothing beyond the call itself.
- ``PendingApproval``: a call waiting for a person's answer (SPEC A1). Its id is the approval
  id, and it carries what the person was shown: the original call's id, the message that
  asked, the redacted arguments and, for ``shell_cmd``, the command line in full; for a file
  tool, the diff of the change.
- ``PendingQuestion``: an ``ask_user`` call waiting for a person's answer (SPEC F3). Its id is
  the call's own id (the question id), and it carries the question and the options offered.

``PendingCall`` is their discriminated union. The cases are separate classes, not one
model with optional fields, so code that needs the approval fields must first establish that
it holds an approval (``match``/``isinstance``) and then reads them without a ``None`` check.
Storage keeps both in one table: the approval's own fields are its ``detail`` JSON column, in
the form ``PendingApproval.detail`` gives and the field aliases read back.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Annotated, Any, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field

from agentworld.models.message import utc_now

PendingKind = Literal["client", "approval", "question"]
PendingStatus = Literal["pending", "answered", "expired", "interrupted", "cancelled"]
"""``cancelled``: the agent that made the call was deleted; the call can no longer be answered."""


class _WaitingCall(BaseModel):
    """What every waiting call has. ``batch_id`` is the assistant message that made it: the
    loop resumes once every waiting call of that message has its answer."""

    model_config = ConfigDict(populate_by_name=True)

    world: str
    tool_call_id: str = Field(alias="toolCallId")
    chat_id: str = Field(alias="chatId")
    agent: str
    tool_name: str = Field(alias="toolName")
    arguments: str
    """The call's arguments as the model wrote them (JSON text)."""
    batch_id: str = Field(alias="batchId")
    trigger_sender: str = Field(alias="triggerSender")
    """Who the agent was answering, so the resumed loop addresses its reply the same way."""
    reply_to: str | None = Field(default=None, alias="replyTo")
    status: PendingStatus = "pending"
    created_at: datetime = Field(default_factory=utc_now, alias="createdAt")
    answered_at: datetime | None = Field(default=None, alias="answeredAt")
    answer: dict[str, Any] | None = None
    traceparent: str | None = None
    """The trace context of the call that waits (``agentworld.tracing``): its answer, applied
    in any process, continues that trace. Kept in the ``detail`` column when set."""

    def waited_longer_than(self, seconds: float) -> bool:
        """Whether the call has waited more than ``seconds`` (a world's approval timeout)."""
        return utc_now() - self.created_at > timedelta(seconds=seconds)


class PendingClientCall(_WaitingCall):
    """A client-side tool call waiting for the client to post its result (SPEC T4)."""

    kind: Literal["client"] = "client"


class ShellDisplay(BaseModel):
    """A ``shell_cmd`` call as the approval request showed it: the stored form of
    ``approval.shell_view.ShellView`` (the models layer cannot import the approval package)."""

    model_config = ConfigDict(populate_by_name=True, frozen=True)

    command_line: str = Field(alias="commandLine")
    directory: str
    commands: list[str]
    """Each command the line runs, masked and escaped."""
    understood: bool
    note: str = ""
    """Why the person should read the whole line (empty when the line was fully understood)."""

    def to_json(self) -> dict[str, Any]:
        """The JSON form stored, audited and shown: the same keys as ``ShellView.to_json``."""
        return self.model_dump(mode="json", by_alias=True)


class SandboxDisplay(BaseModel):
    """The containment an approval request showed (SPEC C1): the stored form of
    ``tools.sandbox.SandboxStatus`` as it was when the person was asked, with its line."""

    model_config = ConfigDict(populate_by_name=True, frozen=True)

    active: bool
    writable: list[str]
    network: Literal["deny", "allow"]
    summary: str
    """The line every approval view shows (``SandboxStatus.describe``)."""

    def to_json(self) -> dict[str, Any]:
        """The approval document's ``sandbox`` value: whether the call runs contained, where
        it can write and whether it reaches the network."""
        return {"active": self.active, "writable": list(self.writable), "network": self.network}


class ShownFile(BaseModel):
    """The file a ``write_file`` / ``edit_file`` approval showed a change to, as it was then:
    its path as resolved in the working directory and the SHA-256 of its bytes (None: it did
    not exist). The approved call writes only if the file is still exactly that."""

    model_config = ConfigDict(populate_by_name=True, frozen=True)

    path: str
    sha256: str | None = None


UNRECORDED_SANDBOX = SandboxDisplay(
    active=False,
    writable=[],
    network="allow",
    summary="containment not recorded for this request: assume it runs NOT sandboxed",
)
"""What a request stored before containment was recorded shows (fails closed: uncontained)."""


class PendingApproval(_WaitingCall):
    """A call waiting for a person's answer (SPEC A1).

    ``tool_call_id`` is the approval id: the id of the injected ``client.requestApproval`` call
    in message ``request_message_id``. The call that runs once approved is
    ``original_call_id`` (with ``tool_name`` and ``arguments``); ``message``, ``tool_args``
    (redacted) and ``shell`` are what the person was shown."""

    kind: Literal["approval"] = "approval"
    original_call_id: str = Field(alias="originalCallId")
    request_message_id: str = Field(alias="requestMessageId")
    message: str
    tool_args: dict[str, Any] = Field(alias="toolArgs")
    """The call's arguments as shown: secrets masked, control characters escaped."""
    shell: ShellDisplay | None = None
    """For ``shell_cmd``: the full command line, its directory and the commands it runs."""
    sandbox: SandboxDisplay = UNRECORDED_SANDBOX
    """Where the call runs if approved, as the person was told (SPEC C1)."""
    diff: str | None = None
    """For ``write_file`` / ``edit_file``: the unified diff of the change the person approves
    (SPEC F1); None for every other tool."""
    file: ShownFile | None = None
    """For ``write_file`` / ``edit_file``: the file as it was when the diff was made; the call
    runs only if it is still so."""

    @property
    def detail(self) -> dict[str, Any]:
        """The approval's own fields in their stored JSON form (the ``detail`` column of the
        pending table; the field aliases read it back). Derived, read-only: use the fields."""
        detail: dict[str, Any] = {
            "originalCallId": self.original_call_id,
            "requestMessageId": self.request_message_id,
            "message": self.message,
            "toolArgs": self.tool_args,
        }
        if self.shell is not None:
            detail["shell"] = self.shell.to_json()
        if self.sandbox != UNRECORDED_SANDBOX:
            detail["sandbox"] = self.sandbox.model_dump(mode="json")
        if self.diff is not None:
            detail["diff"] = self.diff
        if self.file is not None:
            detail["file"] = self.file.model_dump(mode="json", by_alias=True)
        return detail

    @property
    def edited_arguments(self) -> str | None:
        """The arguments a person gave the call when approving it (SPEC F2), as JSON text, or
        None when it runs as the model wrote it."""
        edited = (self.answer or {}).get("arguments")
        return edited if isinstance(edited, str) else None

    @property
    def arguments_to_run(self) -> str:
        """What runs once approved: the person's edit if there is one, else the model's call."""
        return self.edited_arguments or self.arguments


class PendingQuestion(_WaitingCall):
    """An ``ask_user`` call waiting for a person's answer (SPEC F3). ``tool_call_id`` is the
    question id (the call's own id); the answer becomes the call's result."""

    kind: Literal["question"] = "question"
    question: str
    options: list[str] = Field(default_factory=list)
    allow_free_text: bool = Field(default=True, alias="allowFreeText")
    """Whether an answer outside ``options`` is taken (always, when there are no options)."""

    @property
    def detail(self) -> dict[str, Any]:
        """The question's own fields in their stored JSON form (the ``detail`` column)."""
        return {
            "question": self.question,
            "options": list(self.options),
            "allowFreeText": self.allow_free_text,
        }


PendingCall: TypeAlias = Annotated[
    PendingClientCall | PendingApproval | PendingQuestion, Field(discriminator="kind")
]
"""A waiting call: dispatch with ``match`` on the class (or ``kind``) and ``assert_never``."""

"""The confirmation bus (SPEC P7): policy-checked, in-process confirmation for embedders.

An application that runs tools itself can ask ``request_confirmation`` before each
call: ALLOW returns True at once, DENY publishes a ``PolicyRejection`` and returns
False, ASK_USER publishes a ``ConfirmationRequest`` with a correlation id and waits
for the ``ConfirmationResponse`` carrying that id (others are ignored), False after
the timeout. Session and "always" outcomes are remembered with the runtime's own grant
logic (``approval.grants``): for ``shell_cmd`` only the approved commands, by exact name, and
never a line the policy cannot fully read. An "always" outcome publishes ``UpdatePolicy`` and
adds that grant's ALLOW rule at 2.95 to the engine (which never overrides a DENY rule, P6). The
bus knows no working directory to place redirect targets in, so no remembered answer covers a
line that writes files: it is asked about each time.

Inside the agent runtime the same exchange is durable: the correlation id is the
approval id, and the wait is the stored approval request (``runtime.approvals``), not
an in-memory future — so it survives restarts and can be answered elsewhere.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from agentworld.approval.grants import Grant, find_covering_grant, grant_for
from agentworld.callbacks import maybe_await
from agentworld.models import ToolCall, new_id
from agentworld.policy.engine import PolicyEngine, PolicyResult
from agentworld.policy.grant_rules import always_rule
from agentworld.policy.rules import PolicyDecision, PolicyRule

logger = logging.getLogger("agentworld.policy")
_BUS_AGENT = "confirmation-bus"
"""Grants of the bus belong to the bus's one session (the lifetime of the bus)."""


class MessageBusType(StrEnum):
    TOOL_CONFIRMATION_REQUEST = "tool-confirmation-request"
    TOOL_CONFIRMATION_RESPONSE = "tool-confirmation-response"
    TOOL_POLICY_REJECTION = "tool-policy-rejection"
    TOOL_EXECUTION_SUCCESS = "tool-execution-success"
    TOOL_EXECUTION_FAILURE = "tool-execution-failure"
    UPDATE_POLICY = "update-policy"


class ConfirmationOutcome(StrEnum):
    PROCEED_ONCE = "proceed_once"
    PROCEED_SESSION = "proceed_session"
    PROCEED_ALWAYS = "proceed_always"
    CANCEL = "cancel"


@dataclass(frozen=True)
class ConfirmationRequest:
    tool_call: ToolCall
    arguments: dict[str, Any]
    correlation_id: str
    server_name: str | None = None
    type: MessageBusType = MessageBusType.TOOL_CONFIRMATION_REQUEST


@dataclass(frozen=True)
class ConfirmationResponse:
    correlation_id: str
    outcome: ConfirmationOutcome
    type: MessageBusType = MessageBusType.TOOL_CONFIRMATION_RESPONSE

    @property
    def confirmed(self) -> bool:
        return self.outcome is not ConfirmationOutcome.CANCEL


@dataclass(frozen=True)
class PolicyRejection:
    tool_call: ToolCall
    result: PolicyResult
    type: MessageBusType = MessageBusType.TOOL_POLICY_REJECTION


@dataclass(frozen=True)
class ExecutionResult:
    tool_call: ToolCall
    success: bool
    detail: dict[str, Any] = field(default_factory=dict)

    @property
    def type(self) -> MessageBusType:
        return (
            MessageBusType.TOOL_EXECUTION_SUCCESS
            if self.success
            else MessageBusType.TOOL_EXECUTION_FAILURE
        )


@dataclass(frozen=True)
class UpdatePolicy:
    tool_name: str
    rule: PolicyRule
    type: MessageBusType = MessageBusType.UPDATE_POLICY


BusMessage = (
    ConfirmationRequest | ConfirmationResponse | PolicyRejection | ExecutionResult | UpdatePolicy
)
BusHandler = Callable[[BusMessage], "Awaitable[None] | None"]


class ConfirmationBus:
    def __init__(self, engine: PolicyEngine, *, timeout: float = 300.0) -> None:
        self.engine = engine
        self.timeout = timeout
        self._handlers: dict[MessageBusType, list[BusHandler]] = {}
        self._waiting: dict[str, asyncio.Future[ConfirmationOutcome]] = {}
        self._grants: list[Grant] = []
        self._session = new_id("session_")

    def subscribe(self, type: MessageBusType, handler: BusHandler) -> Callable[[], None]:
        handlers = self._handlers.setdefault(type, [])
        handlers.append(handler)
        return lambda: handlers.remove(handler) if handler in handlers else None

    async def publish(self, message: BusMessage) -> None:
        if isinstance(message, ConfirmationResponse):
            waiter = self._waiting.get(message.correlation_id)
            if waiter is not None and not waiter.done():
                waiter.set_result(message.outcome)
        for handler in tuple(self._handlers.get(message.type, ())):
            try:
                await maybe_await(handler(message))
            except Exception:
                logger.exception("confirmation bus handler failed on %s", message.type)

    async def respond(self, correlation_id: str, outcome: ConfirmationOutcome) -> None:
        await self.publish(ConfirmationResponse(correlation_id, outcome))

    async def request_confirmation(
        self, tool_call: ToolCall, arguments: dict[str, Any], server_name: str | None = None
    ) -> bool:
        name = tool_call.function.name
        result = self.engine.evaluate(name, arguments, server_name)
        if result.decision is PolicyDecision.ALLOW:
            return True
        if result.decision is PolicyDecision.DENY:
            await self.publish(PolicyRejection(tool_call, result))
            return False
        if find_covering_grant(
            self._grants, name, arguments, agent=_BUS_AGENT, chat_id=self._session
        ):
            return True
        correlation_id = new_id("confirm_")
        waiter: asyncio.Future[ConfirmationOutcome] = asyncio.get_running_loop().create_future()
        self._waiting[correlation_id] = waiter
        try:
            await self.publish(
                ConfirmationRequest(tool_call, arguments, correlation_id, server_name)
            )
            outcome = await asyncio.wait_for(waiter, self.timeout)
        except TimeoutError:
            return False
        finally:
            self._waiting.pop(correlation_id, None)
        if outcome in (ConfirmationOutcome.PROCEED_SESSION, ConfirmationOutcome.PROCEED_ALWAYS):
            await self._remember(name, arguments, outcome, correlation_id)
        return outcome is not ConfirmationOutcome.CANCEL

    async def _remember(
        self,
        name: str,
        arguments: dict[str, Any],
        outcome: ConfirmationOutcome,
        correlation_id: str,
    ) -> None:
        always = outcome is ConfirmationOutcome.PROCEED_ALWAYS
        grant = grant_for(
            "always" if always else "session",
            world="",
            tool_name=name,
            arguments=arguments,
            agent=_BUS_AGENT,
            chat_id=self._session,
            approval_id=correlation_id,
        )
        if grant is None:  # a line the policy cannot read is approved once, never remembered
            return
        self._grants.append(grant)
        rule = always_rule(grant, source="always (confirmation bus)") if always else None
        if rule is None:
            return
        self.engine = PolicyEngine(
            [*self.engine.rules, rule],
            default=self.engine.default,
            mode=self.engine.mode,
            non_interactive=self.engine.non_interactive,
        )
        await self.publish(UpdatePolicy(name, rule))

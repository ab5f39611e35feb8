"""An agent's question (``ask_user``, SPEC F3) asked in place in ``agentworld talk``, typed for
real into a pseudo-terminal: picked by its number, answered in words, an answer not allowed
refused in place with a hint, and nothing typed before the question armed answers it (C4)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from test_cli_talk import PROMPT, Terminal, make_team, stored, talk, talk_env  # noqa: F401 (fixtures)

from agentworld.cli.talk_question import ARM_SECONDS
from agentworld.testing.openai_wire import OpenAIWireServer, Reply, ToolCallSpec

pytestmark = pytest.mark.both_engines_wide  # on Temporal too in the wide run (tests/conftest.py)

ASKED = r"\? ops asks: Which environment\?\s+1\. staging\s+2\. production"


def ops_asks(script: Any, *, free: bool, delay: float = 0.0) -> None:
    """Agent ``ops`` asks which environment, then says what it heard."""

    def ops(body: dict[str, Any]) -> Reply:
        last = body["messages"][-1]
        if last["role"] == "tool":
            return Reply.text(f"ops heard: {last['content']}")
        if "deploy" not in last["content"]:
            return Reply.text("ops has nothing to ask")
        arguments = {"question": "Which environment?", "options": ["staging", "production"], "allowFreeText": free}
        return Reply.tools(ToolCallSpec("ask_user", json.dumps(arguments)), delay=delay)

    script.by_agent["ops"] = ops


def waiting(cli: Any) -> list[dict[str, Any]]:
    return list(cli("questions", "team", "--json").json()["questions"])


def opened(talk: Any, server: OpenAIWireServer, db_url: str, tmp_path: Path) -> Terminal:  # noqa: F811
    make_team(db_url, server, tmp_path, "ops")
    term = talk("team")
    term.ready()
    return term


def test_a_question_is_answered_by_the_number_of_an_option(
    talk: Any, cli: Any, script: Any, server: OpenAIWireServer, db_url: str, tmp_path: Path  # noqa: F811
) -> None:
    ops_asks(script, free=False)
    term = opened(talk, server, db_url, tmp_path)
    term.line("@ops deploy")
    term.expect(ASKED)
    term.expect(r"answer \(type 1–2 and press Enter\) ›")
    time.sleep(0.3)

    (question,) = waiting(cli)
    term.type("2\r")
    term.expect(rf"answered {question['questionId']}: production")
    term.expect(r"ops: ops heard: [^\n]*production")
    term.expect(PROMPT)
    term.child.sendcontrol("d")

    assert term.exit_status() == 0
    assert waiting(cli) == []


def test_a_question_that_allows_free_text_takes_words_and_refuses_an_answer_out_of_range(
    talk: Any, cli: Any, script: Any, server: OpenAIWireServer, db_url: str, tmp_path: Path  # noqa: F811
) -> None:
    ops_asks(script, free=True)
    term = opened(talk, server, db_url, tmp_path)
    term.line("@ops deploy")
    term.expect(ASKED)
    term.expect(r"or type your own answer\) ›")
    time.sleep(0.3)

    term.type("7\r")
    term.expect(r"there is no option 7")  # refused in place: the question stays
    time.sleep(0.3)
    assert len(waiting(cli)) == 1
    term.type("\x15the qa cluster\r")
    term.expect(r"ops: ops heard: [^\n]*the qa cluster")
    term.expect(PROMPT)
    term.child.sendcontrol("d")

    assert term.exit_status() == 0
    assert waiting(cli) == []


def test_without_free_text_words_are_refused_in_place_with_a_hint(
    talk: Any, cli: Any, script: Any, server: OpenAIWireServer, db_url: str, tmp_path: Path  # noqa: F811
) -> None:
    ops_asks(script, free=False)
    term = opened(talk, server, db_url, tmp_path)
    term.line("@ops deploy")
    term.expect(ASKED)
    term.expect(r"answer \(type 1–2")
    time.sleep(0.3)

    term.type("qa please\r")
    term.expect(r"answer with one of the options: type 1–2 and press Enter")
    time.sleep(0.3)
    assert len(waiting(cli)) == 1
    term.type("\x15staging\r")  # an option's text picks it too
    term.expect(r"ops: ops heard: [^\n]*staging")
    term.expect(PROMPT)
    term.child.sendcontrol("d")
    assert term.exit_status() == 0


def test_keys_typed_before_the_question_armed_never_answer_it_and_wait_at_the_prompt(
    talk: Any, cli: Any, script: Any, server: OpenAIWireServer, db_url: str, tmp_path: Path  # noqa: F811
) -> None:
    ops_asks(script, free=True, delay=1.5)
    term = opened(talk, server, db_url, tmp_path)
    term.line("@ops deploy")
    term.expect(r"ops is thinking")
    term.line("1")  # typed while the agent works: a 1 and an Enter
    term.expect(ASKED)
    term.expect(r"keys ignored for a moment: read the question")
    term.type("2")  # as the question appears: still early
    time.sleep(ARM_SECONDS + 0.5)

    (question,) = waiting(cli)
    assert question["question"] == "Which environment?"
    term.type("staging\r")
    term.expect(r"what you typed before the question was read answered nothing")
    term.expect(r"ops: ops heard: [^\n]*staging")
    term.expect(PROMPT)
    term.type("\r")  # what was typed early waits at the prompt: Enter sends it now
    term.expect(r"ops: ops has nothing to ask")
    term.expect(PROMPT)
    term.child.sendcontrol("d")

    assert term.exit_status() == 0
    said = [m["content"] for m in stored(db_url) if m["role"] == "user"]
    assert said == ["@ops deploy", "1\n2"]  # nothing typed is lost, and it answered nothing


def test_ctrl_c_leaves_a_question_waiting_and_answer_answers_it_later(
    talk: Any, cli: Any, script: Any, server: OpenAIWireServer, db_url: str, tmp_path: Path  # noqa: F811
) -> None:
    ops_asks(script, free=False)
    term = opened(talk, server, db_url, tmp_path)
    term.line("@ops deploy")
    term.expect(ASKED)
    term.expect(r"read the question\)")  # the line to answer on is there
    term.child.sendcontrol("c")
    term.expect(r"left waiting: /questions lists it")
    term.expect(PROMPT)

    (question,) = waiting(cli)
    term.line("/questions")
    term.expect(rf"/answer {question['questionId']} TEXT")
    term.line(f"/answer {question['questionId']} 1")
    term.expect(r"ops: ops heard: [^\n]*staging")
    term.expect(PROMPT)
    term.child.sendcontrol("d")
    assert term.exit_status() == 0


def test_a_question_answered_by_another_process_leaves_the_prompt(
    talk: Any, cli: Any, script: Any, server: OpenAIWireServer, db_url: str, tmp_path: Path  # noqa: F811
) -> None:
    ops_asks(script, free=False)
    term = opened(talk, server, db_url, tmp_path)
    term.line("@ops deploy")
    term.expect(ASKED)
    term.expect(r"read the question\)")
    (question,) = waiting(cli)

    cli("answer", "team", question["questionId"], "production")

    term.expect(rf"question {question['questionId']} was answered elsewhere", timeout=10)
    term.expect(r"ops: ops heard: [^\n]*production")
    term.expect(PROMPT)
    term.child.sendcontrol("d")
    assert term.exit_status() == 0

"""Questions agents ask (``ask_user``, SPEC F3) through the CLI: every command below is a
separate ``agentworld`` process on the same database — the agent asks, ``questions`` lists it,
``answer`` gives the agent the text it then acts on; answers the question does not take are
refused with one line and exit status 1."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentworld.testing.openai_wire import OpenAIWireServer, Reply, ToolCallSpec

pytestmark = pytest.mark.both_engines  # in process and on Temporal (tests/conftest.py)

WHICH = {"question": "Which environment?", "options": ["staging", "production"], "allowFreeText": False}


class Deployer:
    """a1 asks which environment on a person's message, and deploys to whatever it was told."""

    def __init__(self) -> None:
        self.question: dict[str, Any] = dict(WHICH)

    def __call__(self, body: dict[str, Any]) -> Reply:
        last = body["messages"][-1]
        if last["role"] == "tool":
            told = json.loads(last["content"])
            return Reply.text(f"deploying to {told['answer']}" if "answer" in told else f"not deploying: {told}")
        return Reply.tools(ToolCallSpec(name="ask_user", arguments=json.dumps(self.question), id="call_which"))


@pytest.fixture
def deployer(script: Any, cli: Any, server: OpenAIWireServer) -> Deployer:
    agent = Deployer()
    script.by_agent["a1"] = agent
    cli("world", "create", "w1")
    cli("agent", "create", "w1", "a1", "--provider", "openai", "--model", "m",
        "--base-url", server.base_url, "--system-prompt", "agent:a1")
    return agent


def test_an_agent_asks_which_environment_and_goes_on_with_the_answer(
    cli: Any, deployer: Deployer, server: OpenAIWireServer
) -> None:
    sent = cli("send", "w1", "@a1 deploy the release", "--json").json()

    (question,) = sent["pendingQuestions"]
    assert question == {
        "questionId": "call_which", "agent": "a1", "chatId": sent["chatId"],
        "question": "Which environment?", "options": ["staging", "production"],
        "allowFreeText": False, "createdAt": question["createdAt"],
    }
    assert sent["pendingApprovals"] == []
    assert cli("questions", "w1", "--json").json() == {"questions": [question]}
    assert cli("questions", "w1", "--chat", sent["chatId"], "--json").json() == {"questions": [question]}

    refused = cli("answer", "w1", "call_which", "qa", check=False)
    assert refused.code == 1 and refused.stdout == ""
    assert refused.stderr.strip() == 'error: "qa" is not one of the options: "staging", "production"'
    by_number = cli("answer", "w1", "call_which", "1", check=False)
    assert by_number.code == 1 and 'for option 1, answer "staging"' in by_number.stderr
    assert cli("questions", "w1", "--json").json() == {"questions": [question]}  # still waiting

    answered = cli("answer", "w1", "call_which", "staging", "--json").json()

    assert answered["pendingQuestions"] == [] and answered["chatId"] == sent["chatId"]
    assert [(m["role"], m["tool_call_id"], m["content"]) for m in answered["messages"]] == [
        ("tool", "call_which", '{"answer": "staging"}'),
        ("assistant", None, "deploying to staging"),
    ]
    assert cli("questions", "w1", "--json").json() == {"questions": []}
    again = cli("answer", "w1", "call_which", "production", check=False)
    assert again.code == 1
    assert again.stderr.strip() == "error: 'call_which' is already answered; it cannot be answered again"
    unknown = cli("answer", "w1", "call_nobody_made", "staging", check=False)
    assert unknown.code == 1 and "no question 'call_nobody_made' in world 'w1'" in unknown.stderr
    memory = cli("messages", "w1", "--agent", "a1", "--json").json()["messages"]
    assert [m["content"] for m in memory][-2:] == ['{"answer": "staging"}', "deploying to staging"]


def test_the_human_output_shows_the_question_its_options_and_the_command_that_answers(
    cli: Any, deployer: Deployer
) -> None:
    sent = cli("send", "w1", "@a1 deploy")
    listed = cli("questions", "w1")

    for shown in (sent.stdout, listed.stdout):
        assert "question from a1: Which environment?" in shown
        assert "question id:  call_which" in shown
        assert "options:      1. staging\n" in shown and "              2. production\n" in shown
        assert "takes:        one of the options, as written" in shown
        assert "answer w1 call_which staging" in shown
    answered = cli("answer", "w1", "call_which", "production")
    assert "deploying to production" in answered.stdout
    assert cli("questions", "w1").stdout.strip() == "no questions waiting"


def test_a_free_text_answer_comes_from_standard_input(
    cli: Any, deployer: Deployer, db_url: str, tmp_path: Path
) -> None:
    deployer.question = {"question": "Which tag?"}
    cli("send", "w1", "@a1 deploy")

    proc = subprocess.run(
        [sys.executable, "-m", "agentworld", "--db", db_url, "answer", "w1", "call_which", "-", "--json"],
        input="v2.0.1 (the hotfix)\n", capture_output=True, text=True, timeout=60,
        env={**os.environ, "HOME": str(tmp_path), "AGENTWORLD_LLM_RETRIES": "1"},
    )

    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["messages"][-1]["content"] == "deploying to v2.0.1 (the hotfix)"

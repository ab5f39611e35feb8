"""Questions agents ask (``ask_user``, SPEC F3) over HTTP against the real server, on SQLite and
on PostgreSQL: the question goes out on the event stream, is listed, is answered once with an
answer it takes, and the agent goes on with it; a server killed while the question waits
leaves it to be answered from another process."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from http_harness import (
    LLMScript,
    Served,
    SSEClient,
    is_message,
    make_world,
    refusal,
    server_env,
    start_server,
)

from agentworld.testing.openai_wire import OpenAIWireServer, Reply, ToolCallSpec

pytestmark = pytest.mark.both_engines  # in process and on Temporal (tests/conftest.py)

WHICH = {"question": "Which environment?", "options": ["staging", "production"], "allowFreeText": False}


def deployer(body: dict[str, Any]) -> Reply:
    """Asks which environment; deploys to whatever it was told."""
    last = body["messages"][-1]
    if last["role"] == "tool":
        return Reply.text(f"deploying to {json.loads(last['content']).get('answer')}")
    return Reply.tools(ToolCallSpec(name="ask_user", arguments=json.dumps(WHICH)))


def asked(api: httpx.Client, base_url: str, llm: OpenAIWireServer, script: LLMScript, world: str
          ) -> tuple[str, SSEClient, dict[str, Any]]:
    chat = make_world(api, world, llm, "ops")
    script.by_agent[f"{world}/ops"] = deployer
    stream = SSEClient(f"{base_url}/api/worlds/{world}/events")
    assert api.post(f"/api/worlds/{world}/chats/{chat}/messages", json={"text": "@ops deploy"}).status_code == 202
    request = stream.wait_for(lambda f: f.event == "question" and f.data["phase"] == "requested")
    return chat, stream, request.data


def waiting_status(api: httpx.Client, world: str, chat: str) -> tuple[str, int]:
    """The chat's state and its count of questions, once its runner has let it go."""
    deadline = time.monotonic() + 20
    while True:
        (found,) = [c for c in api.get(f"/api/worlds/{world}/status").json()["chats"] if c["chatId"] == chat]
        if found["state"] != "running" or time.monotonic() > deadline:
            return found["state"], found["pendingQuestions"]
        time.sleep(0.05)


def test_a_question_is_listed_answered_once_and_the_agent_goes_on(
    served: Served, api: httpx.Client, llm: OpenAIWireServer, script: LLMScript, world_name: str
) -> None:
    chat, stream, request = asked(api, served.base_url, llm, script, world_name)
    with stream:
        assert (request["question"], request["options"], request["detail"]) == (
            "Which environment?", ["staging", "production"], {"allowFreeText": False}
        )
        (question,) = api.get(f"/api/worlds/{world_name}/questions").json()["questions"]
        assert question == {
            "questionId": request["questionId"], "agent": "ops", "chatId": chat,
            "question": "Which environment?", "options": ["staging", "production"],
            "allowFreeText": False, "createdAt": question["createdAt"],
        }
        listed = api.get(f"/api/worlds/{world_name}/questions", params={"chat": chat}).json()
        assert listed == {"questions": [question]}
        url = f"/api/worlds/{world_name}/questions/{question['questionId']}"
        assert waiting_status(api, world_name, chat) == ("waiting", 1)

        elsewhere = api.post(url, json={"answer": "staging"}, headers={"Origin": "https://evil.example"})
        assert refusal(elsewhere)[:2] == (403, "cross_site")
        not_an_option = api.post(url, json={"answer": "qa"})
        assert refusal(not_an_option)[:2] == (422, "invalid_input")
        assert '"qa" is not one of the options' in refusal(not_an_option)[2]
        assert refusal(api.post(url, json={"answer": " "}))[:2] == (422, "invalid_input")
        assert refusal(api.post(url, json={}))[0] == 422
        assert api.get(f"/api/worlds/{world_name}/questions").json() == {"questions": [question]}

        answered = api.post(url, json={"answer": "staging"})

        assert answered.status_code == 200, answered.text
        doc = answered.json()
        assert set(doc) == {"chatId", "messages", "pendingApprovals", "pendingQuestions"}
        assert (doc["chatId"], doc["pendingQuestions"], doc["pendingApprovals"]) == (chat, [], [])
        assert [m["content"] for m in doc["messages"]] == ['{"answer": "staging"}', "deploying to staging"]
        done = stream.wait_for(lambda f: f.event == "question" and f.data["phase"] == "answered")
        assert done.data["detail"] == {"answer": "staging", "actor": "human"}
        stream.wait_for(is_message("ops", "deploying to staging"))
        assert refusal(api.post(url, json={"answer": "production"}))[:2] == (409, "conflict")
        assert api.get(f"/api/worlds/{world_name}/questions").json() == {"questions": []}


def test_unknown_and_foreign_question_ids_are_not_found(
    served: Served, api: httpx.Client, llm: OpenAIWireServer, script: LLMScript, world_name: str
) -> None:
    _chat, stream, request = asked(api, served.base_url, llm, script, world_name)
    stream.close()
    other = make_world(api, f"{world_name}b", llm, "ops")
    assert other
    foreign = api.post(f"/api/worlds/{world_name}b/questions/{request['questionId']}", json={"answer": "staging"})
    assert refusal(foreign)[:2] == (404, "not_found")
    unknown = api.post(f"/api/worlds/{world_name}/questions/call_nope", json={"answer": "staging"})
    assert refusal(unknown)[:2] == (404, "not_found")
    assert refusal(api.get(f"/api/worlds/{world_name}/questions", params={"chat": "chat_nope"}))[0] == 404
    assert refusal(api.get("/api/worlds/nowhere/questions"))[0] == 404


def test_a_question_whose_server_was_killed_is_answered_from_another_process(
    served: Served, llm: OpenAIWireServer, script: LLMScript, world_name: str, tmp_path: Path
) -> None:
    home = tmp_path / "first"
    home.mkdir()
    first = start_server(served.db_url, home)
    try:
        with first.client() as api:
            chat, stream, request = asked(api, first.base_url, llm, script, world_name)
            stream.close()
    finally:
        first.process.send_signal(signal.SIGKILL)  # no shutdown: it dies waiting
        first.process.wait(10)

    listed = subprocess.run(
        [sys.executable, "-m", "agentworld", "--db", served.db_url, "questions", world_name, "--json"],
        env=server_env(tmp_path), capture_output=True, text=True, timeout=60,
    )
    assert listed.returncode == 0, listed.stderr
    assert [q["questionId"] for q in json.loads(listed.stdout)["questions"]] == [request["questionId"]]
    answered = subprocess.run(
        [sys.executable, "-m", "agentworld", "--db", served.db_url, "answer", world_name,
         request["questionId"], "staging", "--json"],
        env=server_env(tmp_path), capture_output=True, text=True, timeout=60,
    )

    assert answered.returncode == 0, answered.stderr
    doc = json.loads(answered.stdout)
    assert doc["chatId"] == chat, doc
    assert [m["content"] for m in doc["messages"]] == ['{"answer": "staging"}', "deploying to staging"]

"""Several ``agentworld send`` processes posting into one chat at once (on SQLite and on
PostgreSQL): one runner per chat across processes, every message answered exactly once and
in order, each model request the continuation of the one before, one title."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from agentworld.runtime.titles import TITLE_INSTRUCTION
from agentworld.testing.openai_wire import OpenAIWireServer, Reply

SENDERS = 6


def _world(cli: Any, server: OpenAIWireServer) -> str:
    cli("world", "create", "w")
    cli(
        "agent", "create", "w", "a1", "--provider", "openai", "--model", "m",
        "--base-url", server.base_url, "--system-prompt", "agent:a1",
    )
    return str(cli("chat", "new", "w", "--json").json()["chatId"])


def _turns(server: OpenAIWireServer) -> list[list[dict[str, Any]]]:
    return [r["messages"] for r in server.requests if r["messages"][0]["content"] == "agent:a1"]


def _titles(server: OpenAIWireServer) -> int:
    return sum(1 for r in server.requests if r["messages"][0]["content"] == TITLE_INSTRUCTION)


def _send_all_at_once(db_url: str, tmp_path: Path, chat: str, texts: list[str]) -> list[int]:
    env = {
        **os.environ, "HOME": str(tmp_path), "AGENTWORLD_LLM_RETRIES": "1", "NO_COLOR": "1",
    }
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "agentworld", "--db", db_url, "send", "w", text,
             "--chat", chat, "--json"],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )
        for text in texts
    ]
    codes = []
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        codes.append(proc.returncode)
    return codes


def test_six_senders_at_once_each_get_one_answer_and_the_model_sees_one_conversation(
    cli: Any, db_url: str, tmp_path: Path
) -> None:
    def answer(body: dict[str, Any]) -> Reply:
        time.sleep(random.uniform(0.0, 0.05))  # widen every window a race could use
        if body["messages"][0]["content"] == TITLE_INSTRUCTION:
            return Reply.text("Six questions")
        return Reply.text(f"answer to: {body['messages'][-1]['content']}")

    with OpenAIWireServer(responder=answer) as server:
        chat = _world(cli, server)
        texts = [f"@a1 question {i}" for i in range(SENDERS)]

        _send_all_at_once(db_url, tmp_path, chat, texts)

        transcript = cli("messages", "w", "--chat", chat, "--json").json()["messages"]
        questions = [m for m in transcript if m["sender"] == "human"]
        answers = [m for m in transcript if m["role"] == "assistant"]
        assert sorted(q["content"] for q in questions) == sorted(texts)
        assert len(answers) == SENDERS  # each message answered exactly once...
        by_id = {q["messageId"]: q["content"] for q in questions}
        assert sorted(by_id[a["replyToMessageId"]] for a in answers) == sorted(texts)
        for a in answers:  # ...by an answer to that very message
            assert a["content"] == f"answer to: {by_id[a['replyToMessageId']]}"
        # In order: the transcript pairs every answer with the question it follows.
        order = [m["content"] for m in transcript if m["role"] in ("user", "assistant")]
        asked = [c for c in order if c.startswith("@a1")]
        assert [c for c in order if c.startswith("answer to: ")] == [f"answer to: {q}" for q in asked]

        turns = _turns(server)
        assert len(turns) == SENDERS
        for before, after in zip(turns, turns[1:], strict=False):
            # Each request continues the one before: same messages, then its answer, then the
            # next question — never a request without its question, never a lost answer.
            assert after[: len(before)] == before
            assert [m["role"] for m in after[len(before):]] == ["assistant", "user"]
            assert after[len(before)]["content"] == f"answer to: {before[-1]['content']}"
        assert all(t[-1]["role"] == "user" and t[-1]["content"].startswith("@a1 question") for t in turns)
        assert _titles(server) == 1
        (listed,) = cli("chat", "list", "w", "--json").json()["chats"]
        assert listed["name"] == "Six questions"
        assert cli("resume", "w", "--json").json() == {"world": "w", "chats": []}

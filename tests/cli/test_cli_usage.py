"""`agentworld usage` and the price and budget options, through the CLI in subprocesses and the
loopback OpenAI server with fixed token counts (SPEC O2)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agentworld.storage.sql import SQLStorage
from agentworld.testing.openai_wire import Reply

pytestmark = pytest.mark.both_engines_wide  # on Temporal too in the wide run (tests/conftest.py)

IN, OUT = 1200, 300
"""The tokens of every answer: at gpt-4o's $2.50 / $10.00 per million, $0.006 a call."""


def stored_calls(db_url: str) -> list[tuple[str, str, int, int, float | None]]:
    """The agents' answers as stored: agent, model, tokens and cost, read with SQL."""

    async def read() -> list[tuple[str, str, int, int, float | None]]:
        async with SQLStorage(db_url) as storage:

            def rows(conn: Any) -> list[tuple[str, str, int, int, float | None]]:
                from agentworld.storage.statement import Sql

                query = Sql(
                    "SELECT memory_owner, model, input_tokens, output_tokens, cost_usd FROM messages"
                    " WHERE memory_owner IS NOT NULL AND role = 'assistant' AND input_tokens IS NOT NULL"
                )
                return [tuple(row) for row in conn.execute(query)]

            return await storage.in_transaction(rows, write=False)

    return asyncio.run(read())


def test_usage_json_matches_the_stored_calls_and_the_price_table(
    cli: Any, script: Any, server: Any, db_url: str
) -> None:
    script.by_agent["a1"] = lambda body: Reply.text("@a2 your turn", prompt_tokens=IN, completion_tokens=OUT)
    script.by_agent["a2"] = lambda body: Reply.text("@human done", prompt_tokens=IN, completion_tokens=OUT)
    cli("world", "create", "w1")
    for name, model in (("a1", "gpt-4o-2024-08-06"), ("a2", "local-model")):
        cli("agent", "create", "w1", name, "--provider", "openai", "--model", model,
            "--base-url", server.base_url, "--system-prompt", f"agent:{name}")  # fmt: skip
    chat = cli("send", "w1", "@a1 start", "--json").json()["chatId"]

    usage = cli("usage", "w1", "--json").json()
    only_chat = cli("usage", "w1", "--chat", chat, "--json").json()

    stored = stored_calls(db_url)
    assert sorted(stored) == [("a1", "gpt-4o-2024-08-06", IN, OUT, 0.006), ("a2", "local-model", IN, OUT, None)]
    assert usage["total"] == {
        "calls": 2, "inputTokens": 2 * IN, "outputTokens": 2 * OUT, "costUsd": 0.006, "unpricedCalls": 1,
    }  # fmt: skip
    assert usage["byAgent"] == [
        {"agent": "a1", "calls": 1, "inputTokens": IN, "outputTokens": OUT, "costUsd": 0.006, "unpricedCalls": 0},
        {"agent": "a2", "calls": 1, "inputTokens": IN, "outputTokens": OUT, "costUsd": None, "unpricedCalls": 1},
    ]
    assert [(m["model"], m["costUsd"]) for m in usage["byModel"]] == [("gpt-4o-2024-08-06", 0.006), ("local-model", None)]
    assert [(c["chatId"], c["calls"]) for c in usage["byChat"]] == [(chat, 2)]
    assert only_chat == {**usage, "chatId": chat}

    text = cli("usage", "w1").stdout
    assert "$0.006 + 1 call unpriced" in text
    assert "prices as of 2025-10-15" in text
    chats = cli("chat", "list", "w1", "--json").json()["chats"]
    assert chats[0]["usage"]["costUsd"] == 0.006


def test_usage_of_an_unknown_chat_or_world_is_an_error(cli: Any) -> None:
    cli("world", "create", "w1")
    assert "no model calls yet" in cli("usage", "w1").stdout
    missing = cli("usage", "w1", "--chat", "chat_nope", check=False)
    assert missing.code != 0 and "chat_nope" in missing.stderr
    assert cli("usage", "nowhere", check=False).code != 0


def test_prices_and_budgets_are_set_shown_and_cleared_by_their_options(cli: Any) -> None:
    made = cli("world", "create", "w1", "--budget", "$0.50", "--json").json()
    agent = cli("agent", "create", "w1", "a1", "--provider", "scripted", "--model", "echo",
                "--price-in", "1.25", "--price-out", "10", "--budget", "0.2", "--json").json()  # fmt: skip
    assert made["budget"] == 0.5
    assert (agent["priceIn"], agent["priceOut"], agent["budget"]) == (1.25, 10.0, 0.2)

    cleared = cli("agent", "update", "w1", "a1", "--price-in", "", "--budget", "none", "--json").json()
    assert (cleared["priceIn"], cleared["priceOut"], cleared["budget"]) == (None, 10.0, None)
    assert cli("world", "update", "w1", "--budget", "", "--json").json()["budget"] is None

    for flag, value in (("--price-in", "abc"), ("--budget", "-1"), ("--price-out", "inf")):
        refused = cli("agent", "update", "w1", "a1", flag, value, check=False)
        assert refused.code == 2 and refused.stderr.startswith(f"error: {flag}"), refused.stderr


def test_budgets_and_prices_travel_in_the_world_file(cli: Any, tmp_path: Any) -> None:
    cli("world", "create", "team", "--budget", "0.01", "--working-dir", str(tmp_path))
    cli("agent", "create", "team", "a1", "--provider", "openai", "--model", "my-deployment",
        "--price-in", "1.25", "--price-out", "10", "--budget", "0.005")  # fmt: skip
    exported = cli("export", "team").stdout
    assert "budget = 0.01\n" in exported
    assert "priceIn = 1.25\npriceOut = 10.0\nbudget = 0.005\n" in exported
    file = tmp_path / "team.toml"
    file.write_text(exported.replace("budget = 0.01\n", "budget = 2\n"))

    plan = cli("apply", str(file), "--json").json()

    assert [(c["kind"], c["fields"]) for c in plan["changes"]] == [("world", ["budget"])]
    assert cli("world", "show", "team", "--json").json()["budget"] == 2.0
    agent = cli("agent", "show", "team", "a1", "--json").json()
    assert (agent["priceIn"], agent["priceOut"], agent["budget"]) == (1.25, 10.0, 0.005)

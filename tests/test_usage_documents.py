"""The usage document (SPEC O2): totals by agent, chat and model from the summed calls, a cost
of 0 only when nothing was called, null when no call had a price, and unpriced calls counted
apart so a partial sum never passes for the whole."""

from __future__ import annotations

from agentworld.documents import cost_doc, usage_report_doc
from agentworld.models.records import UsageGroup


def group(agent: str, chat: str, model: str | None, cost: float | None, *, calls: int = 1, unpriced: int = 0) -> UsageGroup:
    return UsageGroup(agent, chat, model, calls, 100 * calls, 10 * calls, cost, unpriced)


def test_a_cost_is_known_partial_or_unknown_and_says_which() -> None:
    assert cost_doc([]) == {"calls": 0, "inputTokens": 0, "outputTokens": 0, "costUsd": 0.0, "unpricedCalls": 0}
    assert cost_doc([group("a", "c", "m", None, unpriced=1)])["costUsd"] is None
    partial = cost_doc([group("a", "c", "gpt-4o", 0.1), group("a", "c", "m", None, unpriced=1)])
    assert (partial["calls"], partial["costUsd"], partial["unpricedCalls"]) == (2, 0.1, 1)
    # Float sums are rounded to ten decimals: 0.1 + 0.2 is shown as 0.3.
    assert cost_doc([group("a", "c", "x", 0.1), group("b", "c", "x", 0.2)])["costUsd"] == 0.3


def test_the_report_groups_by_agent_chat_and_model_with_unrecorded_models_last() -> None:
    groups = [
        group("a1", "c1", "gpt-4o", 0.01),
        group("a1", "c2", None, None, unpriced=1),
        group("a2", "c1", "gpt-4o", 0.02, calls=2),
    ]

    doc = usage_report_doc("w", groups, chat_id=None, prices_as_of="2025-10-15")

    assert (doc["world"], doc["chatId"], doc["pricesAsOf"]) == ("w", None, "2025-10-15")
    assert [(r["agent"], r["calls"], r["costUsd"], r["unpricedCalls"]) for r in doc["byAgent"]] == [
        ("a1", 2, 0.01, 1), ("a2", 2, 0.02, 0),
    ]  # fmt: skip
    assert [(r["chatId"], r["costUsd"]) for r in doc["byChat"]] == [("c1", 0.03), ("c2", None)]
    assert [(r["model"], r["calls"], r["costUsd"]) for r in doc["byModel"]] == [("gpt-4o", 3, 0.03), (None, 1, None)]
    assert doc["total"] == {"calls": 4, "inputTokens": 400, "outputTokens": 40, "costUsd": 0.03, "unpricedCalls": 1}

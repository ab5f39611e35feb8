"""`agentworld usage WORLD [--chat ID]`: the tokens and cost of the agents' model calls, by
agent, chat and model (SPEC O2)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from agentworld.cli import output
from agentworld.cli.common import JsonOpt, WorldArg, run

if TYPE_CHECKING:
    from agentworld.agent_world import AgentWorld

ChatOpt = Annotated[str | None, typer.Option("--chat", help="Only this chat.")]


def usage(world: WorldArg, chat: ChatOpt = None, json_out: JsonOpt = False) -> None:
    """Tokens and cost of the agents' model calls by agent, chat and model, with totals.
    Costs were recorded with each call at the prices of the day; a call whose model has no
    price is counted apart (cost unknown), never as free."""
    from agentworld.documents import usage_report_doc
    from agentworld.providers.prices import shipped_prices

    async def load(aw: AgentWorld) -> dict[str, Any]:
        groups = await aw.usage_groups(world, chat_id=chat)
        return usage_report_doc(world, groups, chat_id=chat, prices_as_of=shipped_prices().as_of)

    doc = run(load)
    if json_out:
        output.print_json(doc)
        return
    where = f"chat {chat} of {world}" if chat else world
    for title, key, rows in (
        ("agent", "agent", doc["byAgent"]),
        ("chat", "chatId", doc["byChat"]),
        ("model", "model", doc["byModel"]),
    ):
        output.print_table(
            f"Usage of {where} by {title}",
            [title, "calls", "input tokens", "output tokens", "cost"],
            [_row(row[key] if row[key] is not None else "(not recorded)", row) for row in rows],
            empty=f"no model calls yet in {where}",
        )
        if not rows:
            return
    total = doc["total"]
    output.say(f"total: {_row('', total)[1]} calls, {total['inputTokens']} in / "
               f"{total['outputTokens']} out, {cost_text(total)}")
    output.say(f"prices as of {doc['pricesAsOf']} (shipped table) or the agents' own")


def _row(name: str, doc: dict[str, Any]) -> tuple[str, int, int, int, str]:
    return name, doc["calls"], doc["inputTokens"], doc["outputTokens"], cost_text(doc)


def cost_text(doc: dict[str, Any]) -> str:
    """``$0.0123``, ``$0.0123 + 2 calls unpriced``, or ``unknown (2 calls unpriced)``."""
    from agentworld.models.pricing import format_usd

    unpriced = doc.get("unpricedCalls") or 0
    if doc.get("costUsd") is None:
        return f"unknown ({unpriced} call{'s' * (unpriced != 1)} unpriced)"
    shown = format_usd(doc["costUsd"])
    return f"{shown} + {unpriced} call{'s' * (unpriced != 1)} unpriced" if unpriced else shown

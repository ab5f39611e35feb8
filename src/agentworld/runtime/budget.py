"""What a model call cost, and the budgets that stop the next one (SPEC O2).

A call's cost is recorded with its message at the agent's prices of the day (its
``priceIn``/``priceOut``, else the shipped table's). Before each model call, a chat whose
recorded cost reached the world's ``budget`` (or the agent's cost in it, the agent's
``budget``) is handed back to the people, as the turn limit does: the agent says so and the
agents' conversation stops until a person speaks. A person speaking does not make the budget
fresh: the next agent that would call a model hands back again.
"""

from __future__ import annotations

from dataclasses import dataclass

from agentworld.models import Agent, LLMResponse, Message, World
from agentworld.models.pricing import call_cost, format_usd
from agentworld.models.work import DONE, StepResult
from agentworld.providers.prices import price_of
from agentworld.routing.mentions import BUDGET_MARKER
from agentworld.storage.sql import SQLStorage

BUDGET_TEXT = (
    f"@human {BUDGET_MARKER} ({{spent}} of {{budget}}). Please take control of the conversation."
)


def recorded_cost(agent: Agent, response: LLMResponse) -> float | None:
    """USD the call cost at the agent's prices (the model it asked for, else the one that
    answered); None when neither has a price."""
    price = price_of(agent.model, price_in=agent.price_in, price_out=agent.price_out)
    if price is None and response.model:
        price = price_of(response.model, price_in=agent.price_in, price_out=agent.price_out)
    return call_cost(price, response.usage.input_tokens, response.usage.output_tokens)


@dataclass(frozen=True, slots=True)
class Reached:
    """A budget that is used up: what was spent against what was allowed (USD)."""

    spent: float
    budget: float


async def budget_reached(storage: SQLStorage, world: World, agent: Agent, chat_id: str) -> Reached | None:
    """The world's budget for the chat, or the agent's in it, when its recorded cost reached
    it; None when neither is set (nothing is read then) or both leave room."""
    if world.budget is None and agent.budget is None:
        return None
    chat_spent, agent_spent = await storage.usage.chat_cost(world.name, chat_id, agent.name)
    if world.budget is not None and chat_spent >= world.budget:
        return Reached(chat_spent, world.budget)
    if agent.budget is not None and agent_spent >= agent.budget:
        return Reached(agent_spent, agent.budget)
    return None


def budget_hand_back(
    agent: Agent, chat_id: str, reply_to: str | None, item_id: int, reached: Reached
) -> StepResult:
    """The agent makes no call: it hands the conversation back, and its turn ends."""
    notice = Message(
        chat_id=chat_id,
        role="assistant",
        sender=agent.name,
        agent_id=agent.name,
        content=BUDGET_TEXT.format(spent=format_usd(reached.spent), budget=format_usd(reached.budget)),
        reply_to_message_id=reply_to,
    )
    return StepResult.spoken(notice, finishes=item_id, next=DONE)

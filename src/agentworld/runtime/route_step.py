"""Routing a published message (a ``route`` item): the hooks first, then who answers.

The message is stored already (SPEC E2: persist → hooks → next step). The hooks may answer
in its place or rewrite it (``runtime.hooks``); then the route item becomes, in its place,
one ``loop`` per agent that answers — the message joins each one's memory in the same
step — so the answers come in creation order, before anything queued later.
"""

from __future__ import annotations

from collections.abc import Sequence

from agentworld.models import Agent, Message, World
from agentworld.models.events import MessageEvent
from agentworld.models.work import DONE, InboxChange, Loop, QueuedWork, StepResult, Turn, WorkItem
from agentworld.routing.mentions import is_human_sender, should_agent_respond
from agentworld.routing.messages import is_routable, may_address_anyone
from agentworld.runtime.hooks import HookSet, OnEvent
from agentworld.runtime.turn import handed_back, incoming_copy, responses_said
from agentworld.runtime.turn_context import Steps, TurnContext

HAND_BACK_LOOKBACK = 200
"""How far back a route looks for a hand-back since the people last spoke."""


async def route(
    ctx: TurnContext, hooks: HookSet, world_name: str, queued: QueuedWork, message: Message
) -> Steps:
    """Offer the stored ``message`` to the hooks, then route it (or what they made of it)."""
    chat = queued.chat_id
    done = StepResult(chat, inbox=InboxChange(chat, current=queued.item_id, becomes=()), next=DONE)
    if hooks.may_exist:
        world = await ctx.storage.get_world(world_name)
        in_force = hooks.for_world(world)
        if in_force:
            final, said = await _through_hooks(ctx, in_force, chat, MessageEvent(world=world_name, message=message))
            for step in said:
                yield step
            if final is None:
                yield done
                return
            message = final
    yield await _route_step(ctx, hooks, world_name, queued, message)


async def _through_hooks(
    ctx: TurnContext, in_force: Sequence[OnEvent], chat_id: str, event: MessageEvent
) -> tuple[Message | None, list[StepResult]]:
    """What the hooks in force make of the event's message: the message the agents are to take
    in and answer, or None when nothing is left to route (a hook answered in its place, or the
    message is not one the agents are offered); and the steps that say what hooks answered."""
    from agentworld.runtime.hook_dispatch import dispatch, record_rewrite  # hooks are in force

    message = event.message
    dispatched = await dispatch(
        in_force, event, default_sender=message.agent_id or "hook", bus=ctx.bus
    )
    if dispatched.responded:
        return None, responses_said(None, chat_id, dispatched.responses, reply_to=message.message_id)
    final = dispatched.event.message if isinstance(dispatched.event, MessageEvent) else message
    rewritten = final.content != message.content
    if rewritten:
        await record_rewrite(ctx.storage, ctx.bus, message, final.content or "", dispatched.changed_by)
    if not is_routable(message):
        # A tool result or system note, shown to the hooks after it was used: it is never
        # offered to the agents, rewritten or not.
        return None, []
    if rewritten:
        # What the agents take in and answer; the transcript keeps what was said.
        final = final.model_copy(update={"message_id": message.message_id, "chat_id": chat_id})
    return final, []


async def _route_step(
    ctx: TurnContext, hooks: HookSet, world_name: str, queued: QueuedWork, message: Message
) -> StepResult:
    """The step that turns the route item, in its place, into a loop for each agent that
    answers — with the message in each one's memory. An agent's message to an agent whose
    budget is spent becomes that agent's turn alone: it hands back to the people, and that
    ends the agents' conversation until a person (or the world) speaks."""
    storage = ctx.storage
    starts: list[WorkItem] = []
    remembered: list[tuple[str, Message]] = []
    fresh_budgets = False
    if may_address_anyone(message):  # decided without touching storage: the common case
        world, agents = await storage.world_and_agents(world_name)
        hooks.note(world)
        sender = message.sender
        fresh = is_human_sender(sender) or sender.lower() == "world"
        if not fresh and handed_back(
            await storage.recent_transcript(world_name, queued.chat_id, limit=HAND_BACK_LOOKBACK)
        ):
            agents = []  # control was handed back: the agents' conversation is over
        # Counted since the post reset them (other chats' calls): reset again by this step.
        fresh_budgets = fresh and any(a.llm_call_count for a in agents)
        if fresh_budgets:
            agents = [a.model_copy(update={"llm_call_count": 0}) for a in agents]
        for agent in agents:
            if not _answers(agent, world, message):
                continue
            if not fresh and agent.llm_call_count >= world.turn_limit:
                # It hands back to the people when its turn comes, and that ends the
                # agents' conversation: nobody else answers this message.
                starts, remembered = [Turn(agent=agent.name, message=message)], []
                break
            remembered.append((agent.name, incoming_copy(message, agent.name)))
            starts.append(
                Loop(agent=agent.name, answer_to=sender, reply_to=message.message_id, fresh=fresh)
            )
    return StepResult(
        queued.chat_id,
        memory=tuple(remembered),
        fresh_budgets=fresh_budgets,
        inbox=InboxChange(queued.chat_id, current=queued.item_id, becomes=tuple(starts)),
        next=DONE,
    )


def _answers(agent: Agent, world: World, message: Message) -> bool:
    """Whether ``agent`` is one the message calls on (its turn budget aside)."""
    return agent.status == "active" and should_agent_respond(
        agent.name, sender=message.sender, content=message.content or "", main_agent=world.main_agent
    )

"""Taking up a published message (a ``route`` item): the hooks first, then who answers.

The message is stored already (SPEC E2: persist → hooks → next step). The hooks may answer
in its place or rewrite it (``runtime.hooks``); then the route item becomes, in its place,
one ``loop`` per agent that answers — the message joins each one's memory in the same
transaction — so the answers come in creation order, before anything queued later.
"""

from __future__ import annotations

from collections.abc import Sequence

from agentworld.models import Agent, Message, World
from agentworld.models.events import MessageEvent
from agentworld.models.work import InboxChange, Loop, QueuedWork, TakenUp, Turn, WorkItem
from agentworld.routing.mentions import is_human_sender, should_agent_respond
from agentworld.routing.messages import is_routable, may_address_anyone
from agentworld.runtime.hooks import HookSet, OnEvent
from agentworld.runtime.turn import handed_back, incoming_copy, publish_responses
from agentworld.runtime.turn_context import TurnContext

WorldAndAgents = tuple[World, list[Agent]]

HAND_BACK_LOOKBACK = 200
"""How far back a route looks for a hand-back since the people last spoke."""


class Routed:
    """What a route became: the first agent's loop, to run at once (with the world's settings
    the route read, so the loop need not read them again), or nothing left to do. (A plain
    class: see ``events.bus._Subscription``.)"""

    __slots__ = ("next", "world", "incoming", "taken_up")

    def __init__(
        self,
        next: QueuedWork | None = None,
        world: World | None = None,
        incoming: Message | None = None,
        *,
        taken_up: TakenUp | None = None,
    ) -> None:
        self.next = next
        self.world = world
        self.incoming = incoming
        """The message as it joins the one answering agent's memory, when the route left
        storing it to that agent's loop: the loop stores it — and turns the route item into
        itself — in the transaction of its first memory read (one write less per turn). Until
        then the route item stays in the inbox, so a process that stops in between routes the
        message again."""
        self.taken_up = taken_up
        """The agent's settings and memory, when the post routed the message and read them."""


async def take_up(
    ctx: TurnContext,
    hooks: HookSet,
    world_name: str,
    queued: QueuedWork,
    message: Message,
    *,
    known: WorldAndAgents | None = None,
) -> Routed:
    """Offer the stored ``message`` to the hooks, then route it (or what they made of it).
    ``known``: the world and its agents, when the post that queued the route read them."""
    if hooks.may_exist:
        world = known[0] if known is not None else await ctx.storage.get_world(world_name)
        in_force = hooks.for_world(world)
        if in_force:
            event = MessageEvent(world=world_name, message=message)
            final = await _through_hooks(ctx, in_force, world, queued.chat_id, event)
            if final is None:
                await ctx.settle(InboxChange(queued.chat_id, current=queued.item_id, becomes=()))
                return Routed()
            message, known = final, None  # hooks run any code: the route reads the world anew
    return await _route(ctx, hooks, world_name, queued, message, known)


async def _through_hooks(
    ctx: TurnContext, in_force: Sequence[OnEvent], world: World, chat_id: str, event: MessageEvent
) -> Message | None:
    """What the hooks in force make of the event's message: the message the agents are to take
    in and answer, or None when nothing is left to route (a hook answered in its place, or the
    message is not one the agents are offered)."""
    from agentworld.runtime.hook_dispatch import dispatch, record_rewrite  # hooks are in force

    message = event.message
    dispatched = await dispatch(
        in_force, event, default_sender=message.agent_id or "hook", bus=ctx.bus
    )
    if dispatched.responded:
        await publish_responses(
            ctx, world, None, chat_id, dispatched.responses, reply_to=message.message_id
        )
        return None
    final = dispatched.event.message if isinstance(dispatched.event, MessageEvent) else message
    rewritten = final.content != message.content
    if rewritten:
        await record_rewrite(ctx.storage, ctx.bus, message, final.content or "", dispatched.changed_by)
    if not is_routable(message):
        # A tool result or system note, shown to the hooks after it was used: it is never
        # offered to the agents, rewritten or not.
        return None
    if rewritten:
        # What the agents take in and answer; the transcript keeps what was said.
        final = final.model_copy(update={"message_id": message.message_id, "chat_id": chat_id})
    return final


async def _route(
    ctx: TurnContext,
    hooks: HookSet,
    world_name: str,
    queued: QueuedWork,
    message: Message,
    known: WorldAndAgents | None,
) -> Routed:
    """The route item becomes, in its place, a loop for each agent that answers — with the
    message in each one's memory, in the same transaction. An agent's message to an agent
    whose budget is spent becomes that agent's turn alone: it hands back to the people,
    and that ends the agents' conversation until a person (or the world) speaks."""
    storage = ctx.storage
    starts: list[WorkItem] = []
    remembered: list[tuple[str | None, Message]] = []
    world: World | None = None
    if may_address_anyone(message):  # decided without touching storage: the common case
        world, agents = known if known is not None else await storage.world_and_agents(world_name)
        hooks.note(world)
        sender = message.sender
        fresh = is_human_sender(sender) or sender.lower() == "world"
        if not fresh and handed_back(
            await storage.recent_transcript(world_name, queued.chat_id, limit=HAND_BACK_LOOKBACK)
        ):
            agents = []  # control was handed back: the agents' conversation is over
        if fresh and any(a.llm_call_count for a in agents):
            await storage.reset_llm_calls(world_name)
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
    if len(starts) == 1 and isinstance(starts[0], Loop):  # one agent answers: the common case
        (_agent, incoming), = remembered
        return Routed(QueuedWork(queued.item_id, queued.chat_id, starts[0]), world, incoming)
    await storage.append_messages(
        world_name,
        remembered,
        inbox=InboxChange(queued.chat_id, current=queued.item_id, becomes=tuple(starts)),
    )
    if not starts:
        return Routed()
    return Routed(QueuedWork(queued.item_id, queued.chat_id, starts[0]), world)  # in its place


def _answers(agent: Agent, world: World, message: Message) -> bool:
    """Whether ``agent`` is one the message calls on (its turn budget aside)."""
    return agent.status == "active" and should_agent_respond(
        agent.name, sender=message.sender, content=message.content or "", main_agent=world.main_agent
    )


def single_loop(message: Message, world: World, agents: Sequence[Agent]) -> tuple[Loop, Message] | None:
    """The route of a person's (or the world's) ``message`` when it is the common case —
    the world names no hooks and exactly one agent answers: that agent's loop and the message
    as it joins its memory. None for anything else, which the route step decides as usual.
    Pure, so the post can decide it inside its transaction (``SQLStorage.post_to_chat``); the
    caller makes sure no hook is registered in Python and the message may address anyone."""
    if world.hooks:
        return None
    answering = [agent for agent in agents if _answers(agent, world, message)]
    if len(answering) != 1:
        return None
    (agent,) = answering
    loop = Loop(agent=agent.name, answer_to=message.sender, reply_to=message.message_id, fresh=True)
    return loop, incoming_copy(message, agent.name)

"""The agent loop (SPEC O1–O3): iterative, one step at a time, saved after each step.

An agent answers a message in a loop: build the input fresh from storage,
call the model, and either publish the text answer (done) or run the tool
calls, store their results and go round again. The loop is capped per trigger
(world setting, default 10); at the cap the people watching are told.

The loop changes nothing itself: it yields each step it takes as a value (``StepResult``:
what to store, the events, the inbox change, what comes next), and the runtime commits and
publishes it before the loop goes on, so a crash loses at most the step in flight.

The machinery of tool calls (``runtime.tool_calls``: authorization, approvals, the
executor; ``runtime.hook_dispatch``) is imported where a model first asks for a tool, so a
process whose turns are all answers never loads it (see ARCHITECTURE.md, Start-up).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Sequence
from contextlib import aclosing, nullcontext
from dataclasses import replace
from typing import TYPE_CHECKING

from agentworld import tracing
from agentworld.models import Agent, LLMResponse, Message, ToolCall, World, new_id
from agentworld.models.events import SystemEvent, ToolCallEvent
from agentworld.models.work import DONE, WAIT, InboxChange, Loop, StepResult, Wait
from agentworld.providers.base import LLMRequest
from agentworld.routing.mentions import finalize_reply, is_hand_back, is_human_sender
from agentworld.runtime import step_gate
from agentworld.runtime.budget import budget_hand_back, budget_reached, recorded_cost
from agentworld.runtime.llm_call import call_model
from agentworld.runtime.llm_input import build_prompt, is_client_tool, memory_window
from agentworld.runtime.policy_files import kept_from_tools
from agentworld.runtime.turn_context import UNATTENDED, Steps, TurnContext
from agentworld.storage.sql import SQLStorage
from agentworld.tools.registry import ToolContext

if TYPE_CHECKING:
    from agentworld.runtime.hook_dispatch import Response
    from agentworld.runtime.tool_calls import Batch

logger = logging.getLogger("agentworld.runtime")

TURN_LIMIT_TEXT = (
    "@human Turn limit reached ({count} LLM calls). Please take control of the conversation."
)


async def run_agent_turn(
    ctx: TurnContext, world: World, agent: Agent, trigger: Message, item_id: int
) -> Steps:
    """The agent answers ``trigger`` (its ``turn`` item is ``item_id``): check the turn
    limit, then run the loop, which takes the message into memory as its first step."""
    # A person's (or the world's) message gives every agent a fresh budget (R4): its first
    # call is always allowed, however many calls other chats made since the reset.
    fresh = is_human_sender(trigger.sender) or trigger.sender.lower() == "world"
    if not fresh and agent.llm_call_count >= world.turn_limit:
        yield _hand_back(agent, trigger.chat_id, trigger.message_id, item_id)
        return
    loop = Loop(
        agent=agent.name,
        answer_to=trigger.sender,
        reply_to=trigger.message_id,
        fresh=fresh,
        traceparent=tracing.traceparent(),  # the turn's own span: a process that takes it over continues it
        unattended=UNATTENDED.get(),
    )
    steps = run_agent_loop(
        ctx, world, trigger.chat_id, loop, item_id, incoming=incoming_copy(trigger, agent.name)
    )
    async with aclosing(steps):
        async for step in steps:
            yield step


def handed_back(newest_first: Sequence[Message]) -> bool:
    """Whether an agent handed the conversation back to the people (its turn-limit or budget notice)
    since a person or the world last spoke: then the agents' conversation is over (R4), and
    agents' messages reach nobody until someone speaks again."""
    for message in newest_first:
        if message.role == "user" and (is_human_sender(message.sender) or message.sender.lower() == "world"):
            return False
        if message.role == "assistant" and is_hand_back(message.content or ""):
            return True
    return False


def incoming_copy(message: Message, agent: str) -> Message:
    """A message as it joins ``agent``'s memory: something said to it."""
    return message.model_copy(
        update={"role": "user", "agent_id": agent, "tool_calls": None, "tool_call_id": None}
    )


def _hand_back(agent: Agent, chat_id: str, reply_to: str | None, item_id: int) -> StepResult:
    """The agent used its LLM calls (R4): control goes back to the people, and the turn ends."""
    notice = Message(
        chat_id=chat_id,
        role="assistant",
        sender=agent.name,
        agent_id=agent.name,
        content=TURN_LIMIT_TEXT.format(count=agent.llm_call_count),
        reply_to_message_id=reply_to,
    )
    return StepResult.spoken(notice, finishes=item_id, next=DONE)


async def run_agent_loop(
    ctx: TurnContext,
    world: World,
    chat_id: str,
    loop: Loop,
    item_id: int,
    *,
    incoming: Message | None = None,
) -> Steps:
    """Iterate model calls and tool calls until a text answer or the iteration cap, yielding
    each step for the runtime to commit before the loop goes on.

    The loop lives in the chat's inbox as item ``item_id``. ``incoming`` (the message that
    started the turn) joins the agent's memory, and the item becomes ``loop``, in the same
    transaction as the first read of that memory, before the model is asked (SPEC O3).
    The step that ends the loop removes the item, so a loop whose process stopped is
    continued — from its memory — by whoever runs the chat next: a batch of calls cut short
    is finished first (calls that had started are reported interrupted, never run again). A
    loop that answers a person (``loop.fresh``) makes its first call whatever the turn limit:
    the person's message gave the agent a fresh budget.
    """
    agent_name = loop.agent
    protected, private = kept_from_tools(ctx.storage.url)
    tool_context = ToolContext.for_world(
        world,
        chat_id=chat_id,
        agent=agent_name,
        interactive=ctx.interactive and not world.non_interactive and not UNATTENDED.get(),
        protected=protected,
        private=private,
    )
    waits = StepResult(chat_id, inbox=InboxChange(chat_id, current=item_id, becomes=()), next=WAIT)
    model_calls = loop.calls
    while model_calls < world.max_iterations:
        remember = [incoming] if incoming is not None else []
        agent, memory = await ctx.memory.agent_and_memory(
            world.name,
            agent_name,
            chat_id,
            remember=remember,
            inbox=InboxChange(chat_id, current=item_id, becomes=(loop,)) if remember else None,
        )
        incoming = None
        registry = await ctx.tools_for(world)
        cut_short = await _unfinished_batch(ctx, world.name, agent_name, memory)
        if cut_short is not None:
            from agentworld.runtime.tool_calls import Batch, run_tool_calls  # (module docstring)

            batch_id, calls = cut_short
            if not calls:
                # Every open call waits for a person or a client: the step that said so was
                # cut short by a process that stopped. The answer's resume goes on from here.
                yield waits
                return
            batch = Batch(message_id=batch_id, trigger_sender=loop.answer_to, reply_to=loop.reply_to)
            waiting = False
            async with aclosing(run_tool_calls(ctx, registry, calls, tool_context, batch, resumed=True)) as steps:
                async for step in steps:
                    waiting = waiting or isinstance(step.next, Wait)
                    yield step
            if waiting:
                yield waits
                return
            continue
        # Every LLM call counts against the turn limit (R4), those of a tool loop too.
        if agent.llm_call_count >= world.turn_limit and not (loop.fresh and model_calls == 0):
            yield _hand_back(agent, chat_id, loop.reply_to, item_id)
            return
        # A budget is not made fresh by a person's message: spent is spent (SPEC O2).
        if (reached := await budget_reached(ctx.storage, world, agent, chat_id)) is not None:
            yield budget_hand_back(agent, chat_id, loop.reply_to, item_id, reached)
            return
        request = LLMRequest(
            model=agent.model,
            messages=build_prompt(agent, memory_window(memory, agent.memory_window)),
            tools=registry.specs(),
            temperature=agent.temperature,
            max_tokens=agent.max_tokens,
            deadline=agent.model_deadline_seconds,
        )
        step_gate.enter("model")  # on Temporal, each model call is an activity of its own
        message_id = new_id("msg_")
        with tracing.model_span(agent.provider, agent.model, agent.name) as span:
            called = await call_model(
                ctx.provider_for(agent),
                request,
                bus=ctx.bus,
                chat_id=chat_id,
                agent=agent.name,
                message_id=message_id,
                stream=world.streaming,
                callbacks=ctx.streaming,
            )
            tracing.model_response(span, called.response, request.messages)
        model_calls += 1
        response = called.response
        cost = recorded_cost(agent, response)
        if called.end is not None:
            called.end = called.end.model_copy(update={"cost_usd": cost})
        try:
            if response.type == "text":
                answer = _model_message(response, message_id, chat_id, agent, loop, cost=cost)
                yield StepResult.spoken(
                    answer, by=agent.name, llm_calls=1, finishes=item_id, events=called.ends, next=DONE
                )
                return
            from agentworld.runtime.call_ids import with_unique_call_ids  # (module docstring)
            from agentworld.runtime.hook_dispatch import dispatch
            from agentworld.runtime.tool_calls import Batch, run_tool_calls

            # A repeated id would collide with a stored call or approval: rename it before storing.
            unique, policy = await with_unique_call_ids(
                ctx.storage, world.name, memory, response.tool_calls
            )
            response = response.model_copy(update={"tool_calls": unique})
            batch_context = replace(tool_context, policy=policy)
            request_message = _model_message(response, message_id, chat_id, agent, loop, cost=cost)
            # The loop's item keeps its count of model calls, for whoever continues it.
            counted = loop.model_copy(update={"calls": model_calls})
            yield StepResult.spoken(
                request_message, by=agent.name, llm_calls=1, events=called.ends, finishes=item_id, then=(counted,)
            )
        except (asyncio.CancelledError, GeneratorExit):
            # Stopped before the answer was stored (a stop, or its commit failed): drop its stream.
            if called.end is not None:
                stopped = called.end.model_copy(update={"phase": "error", "error": "stopped"})
                await asyncio.shield(ctx.bus.publish(stopped))
            raise
        batch = Batch(message_id=message_id, trigger_sender=loop.answer_to, reply_to=loop.reply_to)
        hooked = await dispatch(
            ctx.hooks_for(world),
            ToolCallEvent(
                world=world.name,
                chat_id=chat_id,
                agent=agent.name,
                message_id=message_id,
                tool_calls=tuple(response.tool_calls),
            ),
            default_sender=agent.name,
            bus=ctx.bus,
        )
        calls = _calls_to_run(response.tool_calls, hooked.event)
        done = StepResult(chat_id, inbox=InboxChange(chat_id, current=item_id, becomes=()), next=DONE)
        if any(r.enqueue_after == "immediately" for r in hooked.responses):
            for step in _skipped(calls, batch_context, batch):
                yield step
            for step in responses_said(agent.name, chat_id, hooked.responses, reply_to=message_id):
                yield step
            yield done
            return
        waiting = False
        # A hook's reply after the results lives only in this process: on Temporal the batch
        # runs in this activity rather than one call per activity (``step_gate``).
        with step_gate.held_open() if hooked.responded else nullcontext():
            async with aclosing(run_tool_calls(ctx, registry, calls, batch_context, batch)) as steps:
                async for step in steps:
                    waiting = waiting or isinstance(step.next, Wait)
                    yield step
        if hooked.responded:  # enqueue_after="tool_results": the results are stored; now the reply
            for step in responses_said(agent.name, chat_id, hooked.responses, reply_to=message_id):
                yield step
            yield done
            return
        if waiting:
            yield waits
            return  # a call waits for the client (or a person); the answer resumes the loop
    await ctx.bus.publish(
        SystemEvent(
            world=world.name,
            level="error",
            text=(text := _iteration_cap_text(agent_name, world.max_iterations)),
            chat_id=chat_id,
            reason="iteration_cap",
            context={"agent": agent_name, "reason": "iteration_cap"},
        )
    )
    stop_note = Message(chat_id=chat_id, role="system", sender="system", content=text)
    yield StepResult.spoken(stop_note, finishes=item_id, next=DONE)


def _iteration_cap_text(agent: str, cap: int) -> str:
    """What the people watching are told when the loop ends without an answer."""
    return (
        f"{agent} stopped after {cap} LLM iterations without a final answer "
        "(the per-message iteration cap)."
    )


def _model_message(
    response: LLMResponse, message_id: str, chat_id: str, agent: Agent, loop: Loop, *, cost: float | None
) -> Message:
    """The assistant message one model call produced, as the loop stores it: a text answer
    (finalized, addressed to whom the loop answers) or a batch of tool calls with any text
    beside them. Both are the agent's, reply to the loop's trigger and carry the call's token
    usage, model and cost, so the two outcomes of a call are stored alike."""
    content: str | None
    tool_calls: list[ToolCall] | None
    if response.type == "text":
        content = finalize_reply(response.content, agent_name=agent.name, sender=loop.answer_to)
        tool_calls = None
    else:
        content, tool_calls = response.content or None, response.tool_calls
    return Message(
        message_id=message_id,
        chat_id=chat_id,
        role="assistant",
        sender=agent.name,
        agent_id=agent.name,
        content=content,
        tool_calls=tool_calls,
        reply_to_message_id=loop.reply_to,
        input_tokens=response.usage.input_tokens,
        output_tokens=response.usage.output_tokens,
        model=agent.model,
        cost_usd=cost,
    )


def unfinished_calls(memory: Sequence[Message]) -> tuple[str, list[ToolCall]] | None:
    """The agent's latest batch of tool calls, if some of its calls have no result yet.

    Approval requests injected after a batch (assistant messages with only ``client.*``
    calls) and tool results are looked past; anything else said since means the batch is
    not the latest."""
    answered = {m.tool_call_id for m in memory if m.role == "tool"}
    for message in reversed(memory):
        if message.role == "tool":
            continue
        if message.role != "assistant" or not message.tool_calls:
            return None
        if all(is_client_tool(c.function.name) for c in message.tool_calls):
            continue
        open_calls = [c for c in message.tool_calls if c.id not in answered]
        return (message.message_id, open_calls) if open_calls else None
    return None


async def _unfinished_batch(
    ctx: TurnContext, world: str, agent: str, memory: Sequence[Message]
) -> tuple[str, list[ToolCall]] | None:
    """The latest batch's calls with no result that nobody outside the loop is answering:
    the loop's process stopped while handling them, so they are handled now. No calls: every
    open call of the batch waits for someone (a person, a client), so the loop waits too."""
    found = unfinished_calls(memory)
    if found is None:
        return None
    batch_id, calls = found
    waited = await ctx.storage.pending.waited_for(world, batch_id)
    return batch_id, [c for c in calls if c.id not in waited]


async def later_batch_waits(
    storage: SQLStorage, world: str, agent: str, chat_id: str, batch_id: str
) -> bool:
    """Whether the agent made another batch of calls after ``batch_id`` that still waits
    (SPEC A10): resuming the earlier one now would show the model a conversation whose
    end is still waiting; the later batch's own resume continues it instead."""
    memory = await storage.memory(world, agent, chat_id)
    latest = unfinished_calls(memory)
    return latest is not None and latest[0] != batch_id


def _calls_to_run(original: list[ToolCall], hooked: object) -> list[ToolCall]:
    """A hook may change a batch's calls, but not their ids: results must answer the stored calls."""
    if isinstance(hooked, ToolCallEvent):
        changed = list(hooked.tool_calls)
        if sorted(c.id for c in changed) == sorted(c.id for c in original):
            return changed
        logger.error("an on_event hook changed tool call ids; the original calls are used")
    return original


def _skipped(calls: list[ToolCall], context: ToolContext, batch: Batch) -> list[StepResult]:
    """Calls a hook answered in place of running them still get a result, so the memory stays whole."""
    skipped = json.dumps({"skipped": "the application answered in place of this call"})
    return [
        StepResult.spoken(
            Message.tool_result(
                chat_id=context.chat_id,
                agent=context.agent,
                tool_call_id=call.id,
                content=skipped,
                batch_id=batch.message_id,
            ),
            by=context.agent,
        )
        for call in calls
    ]


def responses_said(
    agent: str | None, chat_id: str, responses: list[Response], *, reply_to: str | None
) -> list[StepResult]:
    """What hooks sent in place of a default step, one step each; what the agent "said" it
    remembers."""
    steps = []
    for response in responses:
        own = agent is not None and response.sender == agent
        message = Message(
            chat_id=chat_id,
            role=response.role,
            sender=response.sender,
            agent_id=response.sender if own else None,
            content=response.content,
            reply_to_message_id=reply_to,
        )
        steps.append(StepResult.spoken(message, by=agent if own else None))
    return steps

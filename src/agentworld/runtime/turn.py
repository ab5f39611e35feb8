"""The agent loop (SPEC O1–O3): iterative, one step at a time, saved after each step.

An agent answers a message in a loop: build the input fresh from storage,
call the model, and either publish the text answer (done) or run the tool
calls, store their results and go round again. The loop is capped per trigger
(world setting, default 10); at the cap the people watching are told.

Each step's messages are stored before anything else happens, so a crash loses
at most the step in flight.
"""

from __future__ import annotations

import json
import logging

from agentworld.models import Agent, Message, ToolCall, World, new_id
from agentworld.models.events import SystemEvent, ToolCallEvent
from agentworld.providers.base import LLMRequest
from agentworld.routing.mentions import finalize_reply
from agentworld.runtime.call_ids import with_unique_call_ids
from agentworld.runtime.hooks import Response, dispatch
from agentworld.runtime.llm_call import call_model
from agentworld.runtime.llm_input import build_prompt
from agentworld.runtime.tool_calls import Batch, run_tool_calls
from agentworld.runtime.turn_context import TurnContext
from agentworld.tools.registry import ToolContext

logger = logging.getLogger("agentworld.runtime")

TURN_LIMIT_TEXT = (
    "@human Turn limit reached ({count} LLM calls). Please take control of the conversation."
)


async def run_agent_turn(ctx: TurnContext, world: World, agent: Agent, trigger: Message) -> None:
    """The agent answers ``trigger``: check the turn limit, remember the message, run the loop."""
    if agent.llm_call_count >= world.turn_limit:
        await ctx.publish(
            Message(
                chat_id=trigger.chat_id,
                role="assistant",
                sender=agent.name,
                agent_id=agent.name,
                content=TURN_LIMIT_TEXT.format(count=agent.llm_call_count),
                reply_to_message_id=trigger.message_id,
            )
        )
        return
    incoming = trigger.model_copy(
        update={"role": "user", "agent_id": agent.name, "tool_calls": None, "tool_call_id": None}
    )
    await ctx.storage.record_agent_step(world.name, agent.name, [incoming])
    await run_agent_loop(
        ctx,
        world,
        agent.name,
        trigger.chat_id,
        answer_to=trigger.sender,
        reply_to=trigger.message_id,
    )


async def run_agent_loop(
    ctx: TurnContext,
    world: World,
    agent_name: str,
    chat_id: str,
    *,
    answer_to: str,
    reply_to: str | None,
    incoming: Message | None = None,
) -> None:
    """Iterate model calls and tool calls until a text answer or the iteration cap.

    ``incoming`` (the message that started the turn) joins the agent's memory in the same
    transaction as the first read of that memory, before the model is asked (SPEC O3).
    """
    tool_context = ToolContext.for_world(
        world, chat_id=chat_id, agent=agent_name, interactive=ctx.interactive and not world.non_interactive
    )
    for _iteration in range(world.max_iterations):
        agent, memory = await ctx.memory.agent_and_memory(
            world.name, agent_name, chat_id, remember=[incoming] if incoming is not None else ()
        )
        incoming = None
        registry = await ctx.tools_for(world)
        request = LLMRequest(
            model=agent.model,
            messages=build_prompt(agent, memory),
            tools=registry.specs(),
            temperature=agent.temperature,
            max_tokens=agent.max_tokens,
        )
        message_id = new_id("msg_")
        response = await call_model(
            ctx.provider_for(agent),
            request,
            bus=ctx.bus,
            chat_id=chat_id,
            agent=agent.name,
            message_id=message_id,
            stream=world.streaming,
            callbacks=ctx.streaming,
        )
        usage = response.usage
        if response.type == "text":
            answer = Message(
                message_id=message_id,
                chat_id=chat_id,
                role="assistant",
                sender=agent.name,
                agent_id=agent.name,
                content=finalize_reply(response.content, agent_name=agent.name, sender=answer_to),
                reply_to_message_id=reply_to,
                input_tokens=usage.input_tokens,
                output_tokens=usage.output_tokens,
            )
            await ctx.publish(answer, memory_of=agent.name, llm_calls=1)
            return
        # A repeated id would collide with a stored call or approval: rename it before storing.
        unique = await with_unique_call_ids(ctx.storage, world.name, memory, response.tool_calls)
        response = response.model_copy(update={"tool_calls": unique})
        request_message = Message(
            message_id=message_id,
            chat_id=chat_id,
            role="assistant",
            sender=agent.name,
            agent_id=agent.name,
            content=response.content or None,
            tool_calls=response.tool_calls,
            reply_to_message_id=reply_to,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
        )
        await ctx.publish(request_message, memory_of=agent.name, llm_calls=1)
        batch = Batch(message_id=message_id, trigger_sender=answer_to, reply_to=reply_to)
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
        if any(r.enqueue_after == "immediately" for r in hooked.responses):
            await _skip_calls(ctx, calls, tool_context, batch)
            await publish_responses(
                ctx, world, agent.name, chat_id, hooked.responses, reply_to=message_id
            )
            return
        outcome = await run_tool_calls(ctx, registry, calls, tool_context, batch)
        if hooked.responded:  # enqueue_after="tool_results": the results are stored; now the reply
            await publish_responses(
                ctx, world, agent.name, chat_id, hooked.responses, reply_to=message_id
            )
            return
        if outcome == "wait":
            return  # a call waits for the client (or a person); the answer resumes the loop
        if outcome == "refused":
            await _report_stop(
                ctx,
                world,
                agent_name,
                chat_id,
                "reserved_tool",
                f"{agent_name} tried to call tools reserved for the client; the calls were refused "
                "and the turn ended.",
            )
            return
    await _report_stop(
        ctx,
        world,
        agent_name,
        chat_id,
        "iteration_cap",
        f"{agent_name} stopped after {world.max_iterations} LLM iterations without a final answer "
        "(the per-message iteration cap).",
    )


def _calls_to_run(original: list[ToolCall], hooked: object) -> list[ToolCall]:
    """A hook may change a batch's calls, but not their ids: results must answer the stored calls."""
    if isinstance(hooked, ToolCallEvent):
        changed = list(hooked.tool_calls)
        if sorted(c.id for c in changed) == sorted(c.id for c in original):
            return changed
        logger.error("an on_event hook changed tool call ids; the original calls are used")
    return original


async def _skip_calls(
    ctx: TurnContext, calls: list[ToolCall], context: ToolContext, batch: Batch
) -> None:
    """Calls a hook answered in place of running them still get a result, so the memory stays whole."""
    for call in calls:
        message = Message.tool_result(
            chat_id=context.chat_id,
            agent=context.agent,
            tool_call_id=call.id,
            content=json.dumps({"skipped": "the application answered in place of this call"}),
            batch_id=batch.message_id,
        )
        await ctx.publish(message, memory_of=context.agent)


async def publish_responses(
    ctx: TurnContext,
    world: World,
    agent: str | None,
    chat_id: str,
    responses: list[Response],
    *,
    reply_to: str | None,
) -> None:
    """Publish what hooks sent in place of a default step; what the agent "said" it remembers."""
    for response in responses:
        message = Message(
            chat_id=chat_id,
            role=response.role,
            sender=response.sender,
            agent_id=response.sender if agent is not None and response.sender == agent else None,
            content=response.content,
            reply_to_message_id=reply_to,
        )
        remembered = agent is not None and response.sender == agent
        await ctx.publish(message, memory_of=agent if remembered else None)


async def _report_stop(
    ctx: TurnContext, world: World, agent: str, chat_id: str, reason: str, text: str
) -> None:
    """The loop ended without an answer: tell the people watching (event + transcript)."""
    await ctx.bus.publish(
        SystemEvent(
            world=world.name,
            level="error",
            text=text,
            chat_id=chat_id,
            context={"agent": agent, "reason": reason},
        )
    )
    await ctx.publish(Message(chat_id=chat_id, role="system", sender="system", content=text))

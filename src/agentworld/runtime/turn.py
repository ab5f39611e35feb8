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
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from agentworld.events.bus import EventBus
from agentworld.models import Agent, Message, ToolCall, World, new_id
from agentworld.models.events import SystemEvent, ToolEvent
from agentworld.providers.base import LLMProvider, LLMRequest
from agentworld.routing.mentions import finalize_reply
from agentworld.runtime.llm_call import call_model
from agentworld.runtime.llm_input import build_prompt, is_client_tool
from agentworld.storage.sql import SQLStorage
from agentworld.tools.executor import ToolContext, ToolExecutor, ToolResult

TURN_LIMIT_TEXT = (
    "@human Turn limit reached ({count} LLM calls). Please take control of the conversation."
)


@dataclass(frozen=True)
class TurnContext:
    """What every step of a turn needs; built once per world runtime."""

    storage: SQLStorage
    bus: EventBus
    tools: ToolExecutor
    provider_for: Callable[[Agent], LLMProvider]
    publish: Callable[[Message], Awaitable[None]]
    """Persist, run ``on_event`` subscribers and route a message (SPEC E2)."""


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
        ctx, world, agent.name, trigger.chat_id, answer_to=trigger.sender, reply_to=trigger.message_id
    )


async def run_agent_loop(
    ctx: TurnContext,
    world: World,
    agent_name: str,
    chat_id: str,
    *,
    answer_to: str,
    reply_to: str | None,
) -> None:
    """Iterate model calls and tool calls until a text answer or the iteration cap."""
    tool_context = ToolContext(world=world.name, chat_id=chat_id, agent=agent_name)
    for _iteration in range(world.max_iterations):
        agent, memory = await ctx.storage.agent_and_memory(world.name, agent_name, chat_id)
        request = LLMRequest(
            model=agent.model,
            messages=build_prompt(agent, memory),
            tools=ctx.tools.specs(),
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
            await ctx.storage.record_agent_step(world.name, agent.name, [answer], llm_calls=1)
            await ctx.publish(answer)
            return
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
        await ctx.storage.record_agent_step(world.name, agent.name, [request_message], llm_calls=1)
        await ctx.publish(request_message)
        for call in response.tool_calls:
            result = await _execute(ctx, call, tool_context)
            tool_message = Message(
                chat_id=chat_id,
                role="tool",
                sender=agent.name,
                agent_id=agent.name,
                content=result.content,
                tool_call_id=call.id,
                reply_to_message_id=message_id,
            )
            await ctx.storage.record_agent_step(world.name, agent.name, [tool_message])
            await ctx.publish(tool_message)
    await _report_iteration_cap(ctx, world, agent_name, chat_id)


async def _execute(ctx: TurnContext, call: ToolCall, context: ToolContext) -> ToolResult:
    name = call.function.name
    await ctx.bus.publish(
        ToolEvent(
            world=context.world,
            phase="start",
            chat_id=context.chat_id,
            agent=context.agent,
            tool_call_id=call.id,
            tool_name=name,
        )
    )
    if is_client_tool(name):
        result = ToolResult.error(call.id, f"tool {name!r} is reserved for the client")
    else:
        try:
            json.loads(call.function.arguments or "{}")
        except ValueError as exc:
            result = ToolResult.error(call.id, f"invalid JSON arguments for {name!r}: {exc}")
        else:
            try:
                result = await ctx.tools.execute(call, context)
            except Exception as exc:  # a tool must never crash the loop (SPEC O2)
                result = ToolResult.error(call.id, f"tool {name!r} failed: {exc}")
    await ctx.bus.publish(
        ToolEvent(
            world=context.world,
            phase="error" if result.is_error else "result",
            chat_id=context.chat_id,
            agent=context.agent,
            tool_call_id=call.id,
            tool_name=name,
            detail={"content": result.content[:2000]},
        )
    )
    return result


async def _report_iteration_cap(ctx: TurnContext, world: World, agent: str, chat_id: str) -> None:
    text = (
        f"{agent} stopped after {world.max_iterations} LLM iterations without a final answer "
        "(the per-message iteration cap)."
    )
    await ctx.bus.publish(
        SystemEvent(
            world=world.name,
            level="error",
            text=text,
            chat_id=chat_id,
            context={"agent": agent, "reason": "iteration_cap"},
        )
    )
    await ctx.publish(Message(chat_id=chat_id, role="system", sender="system", content=text))

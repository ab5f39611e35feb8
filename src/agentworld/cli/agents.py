"""`agentworld agent ...`: create, change and inspect agents."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from agentworld.cli import output
from agentworld.cli.common import (
    JsonOpt,
    WorldArg,
    parse_max_tokens,
    parse_memory_window,
    parse_model_deadline,
    parse_temperature,
    run,
    stored_agent_name,
    usd_settings,
)

if TYPE_CHECKING:
    from agentworld.agent_world import AgentWorld
    from agentworld.models import Agent, Usage
    from agentworld.models.records import UsageGroup

app = typer.Typer(help="Create, change and inspect agents.", no_args_is_help=True)


Provider = Annotated[
    str | None,
    typer.Option("--provider", help="openai | anthropic | google | azure | ollama | xai | openai-compatible | scripted"),
]
Model = Annotated[str | None, typer.Option("--model", help="The provider's model name (scripted: echo or file:PATH).")]
BaseUrl = Annotated[str | None, typer.Option("--base-url", help="Endpoint override for any provider, http(s)://…; required for openai-compatible ('' clears).")]
ApiKeyEnv = Annotated[str | None, typer.Option("--api-key-env", help="Env var holding the API key ('' clears: the provider's usual one).")]
SystemPrompt = Annotated[str | None, typer.Option("--system-prompt", help="The agent's instructions.")]
Temperature = Annotated[float | None, typer.Option("--temperature", parser=parse_temperature, help="Sampling temperature, 0 to 2.")]
MaxTokens = Annotated[int | None, typer.Option("--max-tokens", parser=parse_max_tokens, help="Most tokens per answer (1 to 1000000).")]
MemoryWindow = Annotated[int | None, typer.Option("--memory-window", parser=parse_memory_window, help="How many of its latest messages of a chat the agent is shown (0: all; default 500).")]
ModelDeadline = Annotated[int | None, typer.Option("--model-deadline", parser=parse_model_deadline, help="Seconds one model call may take in all, retries included, before the turn ends with an error (default 300).")]
PriceIn = Annotated[str | None, typer.Option("--price-in", help="USD per million input tokens, in place of the shipped price table's ('' clears).")]
PriceOut = Annotated[str | None, typer.Option("--price-out", help="USD per million output tokens, in place of the shipped price table's ('' clears).")]
Budget = Annotated[str | None, typer.Option("--budget", help="USD this agent's calls may cost in one chat; reached, it hands back to a person ('' clears).")]
NameArg = Annotated[str, typer.Argument(metavar="NAME", help="The agent's name: its @mention handle.")]


def _agent_settings(**options: Any) -> dict[str, Any]:
    from agentworld.models import PROVIDER_NAMES

    usd = usd_settings({k: options.pop(k, None) for k in ("price_in", "price_out", "budget")})
    provider = options.get("provider")
    if provider is not None and provider not in PROVIDER_NAMES:
        output.fail(f"--provider: unknown provider {provider!r}: choose one of {', '.join(PROVIDER_NAMES)}", code=2)
    settings = {k: v for k, v in options.items() if v is not None} | usd
    for clearable in ("base_url", "api_key_env"):  # --base-url '' goes back to the default
        if settings.get(clearable) == "":
            settings[clearable] = None
    return settings


def agent_create_or_update(
    ctx: typer.Context,
    world: WorldArg,
    name: NameArg,
    provider: Provider = None,
    model: Model = None,
    base_url: BaseUrl = None,
    api_key_env: ApiKeyEnv = None,
    system_prompt: SystemPrompt = None,
    temperature: Temperature = None,
    max_tokens: MaxTokens = None,
    memory_window: MemoryWindow = None,
    model_deadline_seconds: ModelDeadline = None,
    price_in: PriceIn = None,
    price_out: PriceOut = None,
    budget: Budget = None,
    json_out: JsonOpt = False,
) -> None:
    """`agent create` and `agent update` take the same options; update changes only those given."""
    options = {k: v for k, v in locals().items() if k not in ("ctx", "world", "name", "json_out")}
    settings = _agent_settings(**options)
    if ctx.info_name == "create":
        if provider is None or model is None:
            output.fail("agent create needs --provider and --model", code=2)
        agent = run(lambda aw: aw.create_agent(world, name, **settings))
    else:
        agent = run(lambda aw: aw.update_agent(world, name, **settings))
    _show_agent(agent, None, json_out)


app.command("create", help="Create an agent in a world.")(agent_create_or_update)
app.command("update", help="Change an agent's settings (only the options given).")(agent_create_or_update)


@app.command("list")
def agent_list(world: WorldArg, json_out: JsonOpt = False) -> None:
    """List a world's agents."""
    agents = run(lambda aw: aw.list_agents(world))
    if json_out:
        output.print_json({"agents": [output.agent_doc(a) for a in agents]})
        return
    output.print_agents(world, agents)


@app.command("show")
def agent_show(world: WorldArg, name: NameArg, json_out: JsonOpt = False) -> None:
    """Show one agent with its token usage."""

    async def load(aw: AgentWorld) -> tuple[Agent, Usage, list[UsageGroup]]:
        agent = await aw.get_agent(world, name)
        spent = [g for g in await aw.usage_groups(world) if g.agent == agent.name]
        return agent, await aw.agent_usage(world, agent.name), spent

    agent, usage, spent = run(load)
    _show_agent(agent, usage, json_out, spent)


@app.command("delete")
def agent_delete(world: WorldArg, name: NameArg, json_out: JsonOpt = False) -> None:
    """Delete an agent (its memory stays in the chat transcripts)."""

    async def delete(aw: AgentWorld) -> tuple[str, bool]:
        """The agent's name as it was created (output names it so, as ``world delete`` does),
        and whether it was the world's main agent (the world has none afterwards)."""
        stored = await stored_agent_name(aw, world, name)
        main = (await aw.get_world(world)).main_agent
        await aw.delete_agent(world, stored)
        return stored, main is not None and main.lower() == stored.lower()

    deleted, was_main = run(delete)
    if was_main:
        output.note(f"{deleted} was the main agent of world {world}; it has no main agent now")
    if json_out:
        output.print_json({"deleted": deleted})
    else:
        typer.echo(f"deleted agent {deleted}")


def _show_agent(agent: Any, usage: Any, json_out: bool, spent: Any = None) -> None:
    doc = output.agent_doc(agent, usage, spent)
    if json_out:
        output.print_json(doc)
    else:
        output.print_fields(f"agent {agent.name}", doc)



"""The ``agentworld`` command line (SPEC §3).

Heavy modules (SQLAlchemy, provider SDKs) are imported inside the commands, so
``agentworld --help`` stays fast. Every command runs one asyncio loop over an
``AgentWorld`` and maps our errors to a one-line reason and exit status 1.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from agentworld.cli import output

if TYPE_CHECKING:
    from agentworld.agent_world import AgentWorld

T = TypeVar("T")

app = typer.Typer(
    name="agentworld",
    help="Worlds of LLM agents that talk by @mention, use tools and ask before risky actions.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
world_app = typer.Typer(help="Create, change and inspect worlds.", no_args_is_help=True)
agent_app = typer.Typer(help="Create, change and inspect agents.", no_args_is_help=True)
chat_app = typer.Typer(help="Start and list chats.", no_args_is_help=True)
app.add_typer(world_app, name="world")
app.add_typer(agent_app, name="agent")
app.add_typer(chat_app, name="chat")

_state: dict[str, str | None] = {"db": None}

JsonOpt = Annotated[bool, typer.Option("--json", help="Print exactly one JSON document.")]


@app.callback()
def _global(
    db: Annotated[
        str | None,
        typer.Option("--db", envvar="AGENTWORLD_DB", help="Database URL: sqlite:///FILE or postgresql://…"),
    ] = None,
) -> None:
    _state["db"] = db


def run(action: Callable[[AgentWorld], Awaitable[T]]) -> T:
    """Open the database, run ``action``, close; our errors become a one-line exit."""
    from agentworld.agent_world import AgentWorld
    from agentworld.errors import AgentWorldError

    async def main() -> T:
        async with AgentWorld(_state["db"]) as aw:
            return await action(aw)

    try:
        return asyncio.run(main())
    except AgentWorldError as exc:
        output.fail(str(exc))
    except KeyboardInterrupt:
        output.fail("interrupted", code=130)
    raise AssertionError("unreachable")


# -- worlds ---------------------------------------------------------------------


def _read_json_file(path: Path, what: str) -> Any:
    try:
        return json.loads(path.read_text())
    except OSError as exc:
        output.fail(f"cannot read {what} {path}: {exc.strerror}")
    except ValueError as exc:
        output.fail(f"{what} {path} is not valid JSON: {exc}")


def _world_settings(
    *,
    turn_limit: int | None,
    description: str | None,
    approval_timeout: float | None,
    policy: list[Path] | None,
    mcp_config: Path | None,
    working_dir: Path | None,
    main_agent: str | None,
    max_iterations: int | None,
    streaming: bool | None,
) -> dict[str, Any]:
    settings: dict[str, Any] = {}
    if turn_limit is not None:
        settings["turn_limit"] = turn_limit
    if description is not None:
        settings["description"] = description
    if approval_timeout is not None:
        settings["approval_timeout"] = approval_timeout
    if policy:
        for file in policy:
            if not file.is_file():
                output.fail(f"policy file {file} does not exist")
        settings["policy_files"] = [str(p.expanduser().absolute()) for p in policy]
    if mcp_config is not None:
        config = _read_json_file(mcp_config, "MCP config")
        if not isinstance(config, dict) or not isinstance(config.get("mcpServers"), dict):
            output.fail(f"MCP config {mcp_config} must be an object with an 'mcpServers' object")
        settings["mcp_config"] = config
    if working_dir is not None:
        if not working_dir.is_dir():
            output.fail(f"working directory {working_dir} does not exist")
        settings["working_dir"] = str(working_dir.expanduser().absolute())
    if main_agent is not None:
        settings["main_agent"] = main_agent or None
    if max_iterations is not None:
        settings["max_iterations"] = max_iterations
    if streaming is not None:
        settings["streaming"] = streaming
    return settings


TurnLimit = Annotated[int | None, typer.Option("--turn-limit", help="LLM calls per agent before a human must step in (default 5).")]
Description = Annotated[str | None, typer.Option("--description")]
ApprovalTimeout = Annotated[float | None, typer.Option("--approval-timeout", help="Seconds before an unanswered approval is denied (default 300).")]
Policy = Annotated[list[Path] | None, typer.Option("--policy", help="Policy TOML file (repeatable).")]
McpConfig = Annotated[Path | None, typer.Option("--mcp-config", help='JSON file with {"mcpServers": {...}}.')]
WorkingDir = Annotated[Path | None, typer.Option("--working-dir", help="Directory the world's tools work in.")]
MainAgent = Annotated[str | None, typer.Option("--main-agent", help="Agent that answers unaddressed human messages alone.")]
MaxIterations = Annotated[int | None, typer.Option("--max-iterations", help="LLM iterations per message (default 10).")]
Streaming = Annotated[bool | None, typer.Option("--streaming/--no-streaming", help="Stream model output (default on).")]


@world_app.command("create")
def world_create(
    name: str,
    turn_limit: TurnLimit = None,
    description: Description = None,
    approval_timeout: ApprovalTimeout = None,
    policy: Policy = None,
    mcp_config: McpConfig = None,
    working_dir: WorkingDir = None,
    main_agent: MainAgent = None,
    max_iterations: MaxIterations = None,
    streaming: Streaming = None,
    json_out: JsonOpt = False,
) -> None:
    """Create a world."""
    settings = _world_settings(**{k: v for k, v in locals().items() if k not in ("name", "json_out")})
    world = run(lambda aw: aw.create_world(name, **settings))
    _show_world(world, json_out)


@world_app.command("update")
def world_update(
    name: str,
    turn_limit: TurnLimit = None,
    description: Description = None,
    approval_timeout: ApprovalTimeout = None,
    policy: Policy = None,
    mcp_config: McpConfig = None,
    working_dir: WorkingDir = None,
    main_agent: MainAgent = None,
    max_iterations: MaxIterations = None,
    streaming: Streaming = None,
    json_out: JsonOpt = False,
) -> None:
    """Change a world's settings (only the options given)."""
    settings = _world_settings(**{k: v for k, v in locals().items() if k not in ("name", "json_out")})
    world = run(lambda aw: aw.update_world(name, **settings))
    _show_world(world, json_out)


@world_app.command("list")
def world_list(json_out: JsonOpt = False) -> None:
    """List worlds."""
    worlds = run(lambda aw: aw.list_worlds())
    if json_out:
        output.print_json({"worlds": [output.world_doc(w) for w in worlds]})
        return
    output.print_table(
        "Worlds",
        ["name", "description", "turn limit", "current chat"],
        [(w.name, w.description, w.turn_limit, w.current_chat_id) for w in worlds],
    )


@world_app.command("show")
def world_show(name: str, json_out: JsonOpt = False) -> None:
    """Show one world."""
    _show_world(run(lambda aw: aw.get_world(name)), json_out)


@world_app.command("delete")
def world_delete(name: str, json_out: JsonOpt = False) -> None:
    """Delete a world with its agents, chats and messages."""
    run(lambda aw: aw.delete_world(name))
    if json_out:
        output.print_json({"deleted": name})
    else:
        typer.echo(f"deleted world {name}")


def _show_world(world: Any, json_out: bool) -> None:
    doc = output.world_doc(world)
    if json_out:
        output.print_json(doc)
    else:
        output.print_fields(f"world {world.name}", doc)


# -- agents ---------------------------------------------------------------------

Provider = Annotated[
    str | None,
    typer.Option("--provider", help="openai | anthropic | google | azure | ollama | xai | openai-compatible | scripted"),
]
Model = Annotated[str | None, typer.Option("--model")]
BaseUrl = Annotated[str | None, typer.Option("--base-url", help="Endpoint override for any provider.")]
ApiKeyEnv = Annotated[str | None, typer.Option("--api-key-env", help="Env var holding the API key.")]
SystemPrompt = Annotated[str | None, typer.Option("--system-prompt")]
Temperature = Annotated[float | None, typer.Option("--temperature")]
MaxTokens = Annotated[int | None, typer.Option("--max-tokens")]


def _agent_settings(**options: Any) -> dict[str, Any]:
    from agentworld.models import PROVIDER_NAMES

    provider = options.get("provider")
    if provider is not None and provider not in PROVIDER_NAMES:
        output.fail(f"unknown provider {provider!r}: choose one of {', '.join(PROVIDER_NAMES)}")
    return {k: v for k, v in options.items() if v is not None}


@agent_app.command("create")
def agent_create(
    world: str,
    name: str,
    provider: Provider = None,
    model: Model = None,
    base_url: BaseUrl = None,
    api_key_env: ApiKeyEnv = None,
    system_prompt: SystemPrompt = None,
    temperature: Temperature = None,
    max_tokens: MaxTokens = None,
    json_out: JsonOpt = False,
) -> None:
    """Create an agent in a world."""
    if provider is None or model is None:
        output.fail("agent create needs --provider and --model", code=2)
    settings = _agent_settings(**{k: v for k, v in locals().items() if k not in ("world", "name", "json_out")})
    _show_agent(run(lambda aw: aw.create_agent(world, name, **settings)), None, json_out)


@agent_app.command("update")
def agent_update(
    world: str,
    name: str,
    provider: Provider = None,
    model: Model = None,
    base_url: BaseUrl = None,
    api_key_env: ApiKeyEnv = None,
    system_prompt: SystemPrompt = None,
    temperature: Temperature = None,
    max_tokens: MaxTokens = None,
    json_out: JsonOpt = False,
) -> None:
    """Change an agent's settings (only the options given)."""
    settings = _agent_settings(**{k: v for k, v in locals().items() if k not in ("world", "name", "json_out")})
    _show_agent(run(lambda aw: aw.update_agent(world, name, **settings)), None, json_out)


@agent_app.command("list")
def agent_list(world: str, json_out: JsonOpt = False) -> None:
    """List a world's agents."""
    agents = run(lambda aw: aw.list_agents(world))
    if json_out:
        output.print_json({"agents": [output.agent_doc(a) for a in agents]})
        return
    output.print_table(
        f"Agents of {world}",
        ["name", "provider", "model", "status", "LLM calls", "last active"],
        [(a.name, a.provider, a.model, a.status, a.llm_call_count, a.last_active) for a in agents],
    )


@agent_app.command("show")
def agent_show(world: str, name: str, json_out: JsonOpt = False) -> None:
    """Show one agent with its token usage."""

    async def load(aw: AgentWorld) -> tuple[Any, Any]:
        from agentworld.models import Usage

        agent = await aw.get_agent(world, name)
        usage = (await aw.storage.usage_by_agent(world)).get(agent.name, Usage())
        return agent, usage

    agent, usage = run(load)
    _show_agent(agent, usage, json_out)


@agent_app.command("delete")
def agent_delete(world: str, name: str, json_out: JsonOpt = False) -> None:
    """Delete an agent (its memory stays in the chat transcripts)."""
    run(lambda aw: aw.delete_agent(world, name))
    if json_out:
        output.print_json({"deleted": name})
    else:
        typer.echo(f"deleted agent {name}")


def _show_agent(agent: Any, usage: Any, json_out: bool) -> None:
    doc = output.agent_doc(agent, usage)
    if json_out:
        output.print_json(doc)
    else:
        output.print_fields(f"agent {agent.name}", doc)


# -- chats and messages -----------------------------------------------------------


@chat_app.command("new")
def chat_new(world: str, json_out: JsonOpt = False) -> None:
    """Start a chat and make it the world's current chat; prints its id."""
    chat = run(lambda aw: aw.new_chat(world))
    if json_out:
        output.print_json({"chatId": chat.chat_id})
    else:
        typer.echo(chat.chat_id)


@chat_app.command("list")
def chat_list(world: str, json_out: JsonOpt = False) -> None:
    """List a world's chats with their titles, sizes and token usage."""

    async def load(aw: AgentWorld) -> tuple[Any, Any]:
        return await aw.list_chats(world), await aw.storage.usage_by_chat(world)

    chats, usage = run(load)
    if json_out:
        output.print_json({"chats": [output.chat_doc(c, usage.get(c.chat_id)) for c in chats]})
        return
    output.print_table(
        f"Chats of {world}",
        ["chat id", "name", "messages", "created"],
        [(c.chat_id, c.name, c.message_count, c.created_at) for c in chats],
    )


@app.command("send")
def send(
    world: str,
    text: str,
    chat: Annotated[str | None, typer.Option("--chat", help="Chat id (default: the current chat).")] = None,
    sender: Annotated[str, typer.Option("--sender")] = "human",
    timeout: Annotated[float | None, typer.Option("--timeout", help="Seconds to wait for the world to go idle.")] = None,
    json_out: JsonOpt = False,
) -> None:
    """Publish TEXT as a human message, run the world until idle, print what it produced."""

    async def go(aw: AgentWorld) -> Any:
        try:
            return await aw.send(world, text, chat_id=chat, sender=sender, timeout=timeout)
        except TimeoutError:
            from agentworld.errors import AgentWorldError

            raise AgentWorldError(f"the world did not go idle within {timeout} s") from None

    result = run(go)
    if json_out:
        output.print_json(
            {
                "chatId": result.chat_id,
                "messages": [m.to_json() for m in result.messages],
                "pendingApprovals": [],
            }
        )
    else:
        output.print_messages(result.messages)
    if result.errors:
        output.fail(result.errors[-1])


@app.command("messages")
def messages(
    world: str,
    chat: Annotated[str | None, typer.Option("--chat", help="Chat id (default: the current chat).")] = None,
    agent: Annotated[str | None, typer.Option("--agent", help="Show this agent's full memory instead.")] = None,
    json_out: JsonOpt = False,
) -> None:
    """Print a chat's transcript, or with --agent that agent's memory."""

    async def load(aw: AgentWorld) -> tuple[str | None, list[Any]]:
        settings = await aw.get_world(world)
        chat_id = chat or settings.current_chat_id
        if chat is not None:
            await aw.storage.get_chat(world, chat)
        if agent is not None:
            owner = await aw.get_agent(world, agent)
            return chat_id, await aw.storage.memory(world, owner.name, chat)
        if chat_id is None:
            return None, []
        return chat_id, await aw.storage.transcript(world, chat_id)

    chat_id, found = run(load)
    if json_out:
        output.print_json({"chatId": chat_id, "agent": agent, "messages": [m.to_json() for m in found]})
    else:
        output.print_messages(found)


@app.command("demo")
def demo() -> None:
    """Run a self-contained offline demo (no API key, nothing outside a temp dir)."""
    from agentworld.cli.demo import run_demo

    asyncio.run(run_demo())


def _configure_logging() -> None:
    import logging
    import os

    level = os.environ.get("AGENTWORLD_LOG", "").upper()
    if level:
        logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")


def main() -> None:
    _configure_logging()
    app()

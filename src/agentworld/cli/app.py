"""The ``agentworld`` command line (SPEC §3): the top-level app and its sub-commands.

Heavy modules (SQLAlchemy, provider SDKs, MCP) are imported inside the commands, so
``agentworld --help`` stays fast (SPEC §6).
"""

from __future__ import annotations

import asyncio
from typing import Annotated

import typer

from agentworld.cli import agents, approvals, chats, policy, resume, tools, worlds
from agentworld.cli.common import state

app = typer.Typer(
    name="agentworld",
    help="Worlds of LLM agents that talk by @mention, use tools and ask before risky actions.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(worlds.app, name="world")
app.add_typer(agents.app, name="agent")
app.add_typer(chats.app, name="chat")
app.add_typer(policy.app, name="policy")
app.command("send")(chats.send)
app.command("messages")(chats.messages)
app.command("resume")(resume.resume)
tools.register(app)
approvals.register(app)


@app.callback()
def _global(
    db: Annotated[
        str | None,
        typer.Option("--db", envvar="AGENTWORLD_DB", help="Database URL: sqlite:///FILE or postgresql://…"),
    ] = None,
) -> None:
    state["db"] = db


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

"""``agentworld talk WORLD [--chat ID | --new]``: the interactive mode (SPEC I2).

This module is only the command: it is imported with every ``agentworld`` command, so the
session (``talk_session``) and prompt_toolkit load only when ``talk`` runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from typing import Annotated

import typer

from agentworld.cli import output
from agentworld.cli.common import run, state, tune_collector, warn_if_uncontained


def talk(
    world: Annotated[str, typer.Argument(metavar="WORLD", help="The world's name (any case).")],
    chat: Annotated[str | None, typer.Option("--chat", help="Talk in this chat (default: the world's current chat).")] = None,
    new: Annotated[bool, typer.Option("--new", help="Start a new chat and talk there.")] = False,
) -> None:
    """Talk with a world's agents: answers stream in; approvals and agents' questions are
    asked at the prompt.

    Enter sends, Esc-Enter starts a new line, Tab completes @agent names and /commands
    (/help lists them). Ctrl-C stops a turn; Ctrl-D leaves.
    """
    if chat is not None and new:
        output.fail("give --chat ID or --new, not both", code=2)
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        output.fail("talk needs a terminal; in scripts use: agentworld send WORLD TEXT", code=2)
    from agentworld.cli.talk_session import TalkSession

    run(lambda aw: warn_if_uncontained(aw, world))  # before the screen is taken (SPEC C1)
    session = TalkSession(world, chat=chat, new=new, db=state["db"])
    tune_collector()
    with contextlib.suppress(KeyboardInterrupt):
        code = asyncio.run(session.run())
        raise SystemExit(code)
    raise SystemExit(0)

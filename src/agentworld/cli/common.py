"""What every command shares: the database option, the async runner, JSON file reading."""

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

state: dict[str, Any] = {"db": None, "interactive": True}

JsonOpt = Annotated[bool, typer.Option("--json", help="Print exactly one JSON document.")]


def run(action: Callable[[AgentWorld], Awaitable[T]]) -> T:
    """Open the database, run ``action``, close; our errors become a one-line exit."""
    from agentworld.agent_world import AgentWorld
    from agentworld.errors import AgentWorldError

    async def main() -> T:
        async with AgentWorld(state["db"], interactive=state["interactive"]) as aw:
            return await action(aw)

    try:
        return asyncio.run(main())
    except AgentWorldError as exc:
        output.fail(str(exc))
    except KeyboardInterrupt:
        output.fail("interrupted", code=130)
    raise AssertionError("unreachable")


def read_json_file(path: Path, what: str) -> Any:
    try:
        return json.loads(path.read_text())
    except OSError as exc:
        output.fail(f"cannot read {what} {path}: {exc.strerror}")
    except ValueError as exc:
        output.fail(f"{what} {path} is not valid JSON: {exc}")


def parse_json_option(text: str, what: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as exc:
        output.fail(f"{what} is not valid JSON: {exc}")

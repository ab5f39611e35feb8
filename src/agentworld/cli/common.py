"""What every command shares: the database option, the async runner, the parsers of numeric
options, the ``--sender``, ``--chat`` and ``--agent`` checks, JSON file reading.

Models are imported inside the functions: ``agentworld --help`` must not pay for pydantic.
"""

from __future__ import annotations

import asyncio
import gc
import json
import math
import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from agentworld import strict_json
from agentworld.cli import output
from agentworld.cli import state as cli_state

if TYPE_CHECKING:
    from agentworld.agent_world import AgentWorld

T = TypeVar("T")

state = cli_state.state
"""Shared with ``cli.app`` and ``cli.output`` through ``cli.state``."""

JsonOpt = Annotated[bool, typer.Option("--json", help="Print exactly one JSON document.")]


def stored_world_name(ctx: typer.Context, name: str | None) -> str | None:
    """The stored spelling of the world ``name`` names, for every argument that names a world.

    World names, like agent names and @mentions, are one name whatever their case: ``Team``
    cannot be created beside ``team``, so ``team`` finds ``Team`` — in every command, not only
    in those whose lookup happens to ignore case. A name no world has is returned as typed, so
    the command reports it. This costs one short read through the facade before the command
    runs."""
    from agentworld.models.domain import name_problem

    creating = ctx.parent is not None and (ctx.parent.info_name, ctx.info_name) == ("world", "create")
    if name is None or name_problem(name) is not None or creating:
        # Not a name at all: the command refuses it with its own message. A world to create
        # is taken as typed: creating it says which spelling exists, if one does.
        return name

    async def lookup(aw: AgentWorld) -> str:
        return await aw.world_name(name)

    return run(lookup)


WorldArg = Annotated[
    str,
    typer.Argument(metavar="WORLD", help="The world's name (any case).", callback=stored_world_name),
]


YOUNG_OBJECTS_PER_COLLECTION = 7_000
"""How many more container objects a CLI or server process allocates than it frees before its
cycle collector looks at the young ones (Python's default: 700). A turn makes and drops
thousands, so with the default many chats at once spend a good part of their time in
collections; only cyclic garbage waits longer here (figures in ``benchmarks/README.md``)."""


def tune_collector() -> None:
    """Make this process's cycle collector fit a long-lived asyncio process: take every object
    alive now out of its sight (``gc.freeze``) and collect young objects less often
    (``YOUNG_OBJECTS_PER_COLLECTION``).

    Before a command's event loop starts, what is alive is what the imports made: modules,
    classes, functions, which live as long as the process, and which every full collection
    would walk again. This process is the CLI's own (or ``agentworld serve``'s), so these
    choices are ours to make; the library leaves an embedding process's collector alone. What
    the command creates from here on is collected as usual."""
    gc.freeze()
    _young, *older = gc.get_threshold()
    gc.set_threshold(YOUNG_OBJECTS_PER_COLLECTION, *older)


def run(action: Callable[[AgentWorld], Awaitable[T]]) -> T:
    """Open the database, run ``action``, close; our errors become a one-line exit. Ctrl-C
    while ``action`` runs a chat stops that chat's turn and ``action`` returns what was
    produced (its result ``interrupted``); any other Ctrl-C ends the command with 130
    (``cli/interrupts.py``)."""
    from agentworld.agent_world import AgentWorld
    from agentworld.cli.interrupts import INTERRUPTED_EXIT, handling_ctrl_c
    from agentworld.errors import AgentWorldError, InvalidInputError
    from agentworld.run_results import StopRequest

    async def main() -> T:
        stop = StopRequest()
        with handling_ctrl_c(stop):
            async with AgentWorld(state["db"], interactive=state["interactive"], stop_request=stop) as aw:
                return await action(aw)

    try:
        check_database(state["db"])
        tune_collector()
        return asyncio.run(main())
    except InvalidInputError as exc:
        output.fail(name_flags(str(exc)))
    except AgentWorldError as exc:
        output.fail(str(exc))
    except (KeyboardInterrupt, asyncio.CancelledError):
        # Ctrl-C before anything was run (start-up): nothing was stored that needs stopping.
        output.fail("interrupted", code=INTERRUPTED_EXIT)
    raise AssertionError("unreachable")


def read_json_file(path: Path, what: str) -> Any:
    try:
        return json.loads(path.read_text())
    except OSError as exc:
        output.fail(f"cannot read {what} {path}: {exc.strerror}")
    except ValueError as exc:
        output.fail(f"{what} {path} is not valid JSON: {exc}")


def parse_json_option(text: str, what: str) -> Any:
    """The JSON value of an option, strictly: ``NaN``, ``Infinity`` and numbers too large
    for a float are not JSON (Python's parser takes them), and nesting deep enough to exhaust
    the parser is refused, each as one line."""
    try:
        return strict_json.loads(text)
    except RecursionError:
        output.fail(f"{what} is nested too deeply")
    except ValueError as exc:
        output.fail(f"{what} is not valid JSON: {exc}")


def check_database(db: str | None) -> None:
    """Refuse a ``--db`` that saves nothing, sits in a directory that does not exist (only the
    default one is created), or is another program's SQLite file — before anything is written
    to it. Raises ``InvalidInputError`` / ``StorageError``."""
    from agentworld.errors import StorageError
    from agentworld.storage.url import (
        check_command_line_database,
        resolve_database_url,
        sqlite_file,
    )
    from agentworld.storage.versions import sqlite_foreign_schema

    url = resolve_database_url(db)
    check_command_line_database(url)
    path = sqlite_file(url)
    if path is not None and (problem := sqlite_foreign_schema(path)) is not None:
        raise StorageError(f"--db {path}: {problem}")


_FLAGS: dict[str, str] = {
    "turn_limit": "--turn-limit",
    "max_iterations": "--max-iterations",
    "approval_timeout": "--approval-timeout",
    "working_dir": "--working-dir",
    "worker_queue": "--worker-queue",
    "main_agent": "--main-agent",
    "policy_files": "--policy",
    "policy_mode": "--mode",
    "mcp_config": "--mcp-config",
    "allowed_tools": "--allowed-tool",
    "excluded_tools": "--excluded-tool",
    "hooks": "--hook",
    "client_tools": "--client-tools",
    "tool_env": "--tool-env",
    "provider": "--provider",
    "model": "--model",
    "system_prompt": "--system-prompt",
    "memory_window": "--memory-window",
    "model_deadline_seconds": "--model-deadline",
    "temperature": "--temperature",
    "max_tokens": "--max-tokens",
    "base_url": "--base-url",
    "api_key_env": "--api-key-env",
    "price_in": "--price-in",
    "price_out": "--price-out",
    "budget": "--budget",
}
_SETTING_AT_START = re.compile(r"(^|; )([a-z_]+)(?=: | must | is required )")


def name_flags(message: str) -> str:
    """A settings error as the command line says it: ``turn_limit: …`` becomes
    ``--turn-limit: …``. The model names its settings; a person typed flags."""

    def flag(match: re.Match[str]) -> str:
        return match[1] + _FLAGS.get(match[2], match[2])

    return _SETTING_AT_START.sub(flag, message.removeprefix("name: "))


# -- numeric options -------------------------------------------------------------------------
# Parsers for ``typer.Option(parser=...)``. A refusal is a ``typer.BadParameter``; the app
# prints it as one line naming the flag: "error: --turn-limit must be ≥ 1" (``cli/app.py``).


def parse_int(value: str, *, minimum: int, maximum: int) -> int:
    """An integer from ``minimum`` to ``maximum``; ``1e3``, ``2.5`` and ``abc`` are not integers."""
    try:
        number = int(value.strip())
    except ValueError:
        raise typer.BadParameter(f"{value!r} is not an integer") from None
    if number < minimum:
        raise typer.BadParameter(f"must be ≥ {minimum}")
    if number > maximum:
        raise typer.BadParameter(f"must be ≤ {maximum}")
    return number


def parse_float(value: str, *, minimum: float, maximum: float, above_minimum: bool = False) -> float:
    """A finite number from ``minimum`` (excluded with ``above_minimum``) to ``maximum``."""
    try:
        number = float(value)
    except ValueError:
        raise typer.BadParameter(f"{value!r} is not a number") from None
    if not math.isfinite(number):
        raise typer.BadParameter(f"must be a finite number, not {value!r}")
    if number < minimum or (above_minimum and number == minimum):
        raise typer.BadParameter(f"must be {'>' if above_minimum else '≥'} {_plain(minimum)}")
    if number > maximum:
        raise typer.BadParameter(f"must be ≤ {_plain(maximum)}")
    return number


def _plain(number: float) -> str:
    """``31536000``, not ``3.1536e+07``: the bound as people type it."""
    return str(int(number)) if float(number).is_integer() else str(number)


def parse_turn_limit(value: str) -> int:
    """``--turn-limit``: LLM calls per agent before a person must step in."""
    from agentworld.models.settings import MAX_TURN_LIMIT

    return parse_int(value, minimum=1, maximum=MAX_TURN_LIMIT)


def parse_max_iterations(value: str) -> int:
    """``--max-iterations``: LLM iterations per message."""
    from agentworld.models.settings import MAX_ITERATIONS

    return parse_int(value, minimum=1, maximum=MAX_ITERATIONS)


def parse_max_tokens(value: str) -> int:
    """``--max-tokens``: an agent's output limit."""
    from agentworld.models.settings import MAX_OUTPUT_TOKENS

    return parse_int(value, minimum=1, maximum=MAX_OUTPUT_TOKENS)


def parse_memory_window(value: str) -> int:
    """``--memory-window``: 0 (the whole memory), or how many latest messages an agent is shown."""
    from agentworld.models.domain import MAX_MEMORY_WINDOW, MIN_MEMORY_WINDOW

    number = parse_int(value, minimum=0, maximum=MAX_MEMORY_WINDOW)
    if 0 < number < MIN_MEMORY_WINDOW:
        raise typer.BadParameter(f"must be 0 (the whole memory) or ≥ {MIN_MEMORY_WINDOW}")
    return number


def parse_model_deadline(value: str) -> int:
    """``--model-deadline``: seconds one model call may take in all, retries included."""
    from agentworld.models.settings import MAX_MODEL_DEADLINE_SECONDS

    return parse_int(value, minimum=1, maximum=MAX_MODEL_DEADLINE_SECONDS)


def parse_temperature(value: str) -> float:
    """``--temperature``: 0 to 2, as every provider accepts."""
    return parse_float(value, minimum=0, maximum=2)


def usd_settings(flags: dict[str, str | None]) -> dict[str, float | None]:
    """``--price-in``, ``--price-out``, ``--budget`` (by setting name) as the settings they
    set: USD, finite and ≥ 0 (a leading ``$`` allowed); '' or ``none`` clears one. Those not
    given are left out; a bad value ends the command naming its flag."""
    settings: dict[str, float | None] = {}
    for key, value in flags.items():
        if value is None:
            continue
        if value.strip().lower() in ("", "none"):
            settings[key] = None
            continue
        try:
            settings[key] = parse_float(value.strip().removeprefix("$"), minimum=0, maximum=1e9)
        except typer.BadParameter as exc:
            from agentworld.cli import output

            output.fail(f"{_FLAGS[key]}: {exc.message}", code=2)
    return settings


def parse_seconds(value: str) -> float:
    """A wait in seconds (``--timeout``, ``--approval-timeout``): finite, above 0, at most a
    year (``inf`` is not JSON, and ``1e400`` is ``inf``)."""
    from agentworld.models.domain import MAX_APPROVAL_TIMEOUT

    return parse_float(value, minimum=0, above_minimum=True, maximum=MAX_APPROVAL_TIMEOUT)


async def warn_if_uncontained(aw: AgentWorld, world: str) -> None:
    """Say plainly on stderr, before a world runs, that its commands would run uncontained
    (``sandbox auto`` where no sandbox can be made) or refuse to run (``on``): SPEC C1. Never
    on stdout, where ``--json`` prints exactly one document."""
    from agentworld.errors import AgentWorldError
    from agentworld.tools.sandbox import sandbox_status

    try:
        settings = await aw.get_world(world)
    except AgentWorldError:
        return  # no such world: the command itself says so
    status = await asyncio.to_thread(
        sandbox_status, settings.sandbox, settings.network, settings.working_dir
    )
    if status.warning is not None:
        output.warn(f"world {world}: {status.warning}")


def warn_if_no_sandbox_here() -> None:
    """The start-up warning of a command that runs many worlds (``serve``, ``demo``): no
    sandbox can be made on this machine, so worlds set to ``auto`` run commands uncontained."""
    from agentworld.tools.sandbox import bubblewrap_problem

    problem = bubblewrap_problem()
    if problem is not None:
        output.warn(
            f"no sandbox can be made here ({problem}); worlds with sandbox auto run commands "
            "UNCONTAINED, and those with sandbox on refuse to run shell tools"
        )


async def check_sender(aw: AgentWorld, world: str, sender: str) -> None:
    """Refuse a ``--sender`` that is not a name (one line, the mention alphabet) or that poses
    as an agent of ``world`` (SPEC R2): ``InvalidInputError`` naming the flag."""
    from agentworld.errors import InvalidInputError
    from agentworld.models.domain import sender_problem

    agents = [agent.name for agent in await aw.list_agents(world)]
    if (problem := sender_problem(sender, agents)) is not None:
        raise InvalidInputError(f"--sender {sender!r}: {problem}")


async def check_chat(aw: AgentWorld, world: str, chat_id: str | None) -> None:
    """Refuse a ``--chat`` the world does not have (``NotFoundError``): an unknown chat id is
    an error in every command that takes one (docs/cli.md), never an empty answer that reads
    as "nothing there"."""
    if chat_id is not None:
        await aw.get_chat(world, chat_id)


async def stored_agent_name(aw: AgentWorld, world: str, name: str) -> str:
    """The spelling the agent ``name`` names was created with (names are one name whatever
    their case), for output and JSON; ``NotFoundError`` when the world has no such agent."""
    return (await aw.get_agent(world, name)).name

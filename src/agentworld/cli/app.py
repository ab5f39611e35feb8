"""The ``agentworld`` command line (SPEC §3): the top-level app and its sub-commands.

Each command's module is imported only when that command runs (or a help text lists it),
through ``LazyGroup``: ``agentworld messages`` never loads the server, the chat session or
the policy commands. Heavy modules (SQLAlchemy, provider SDKs, MCP) are imported inside the
commands.

``run_command_line`` runs the app with click's standalone mode off, so that every error — a
malformed command line included — is one line on stderr (``error: --turn-limit: 'abc' is not
an integer``, exit 2) instead of a boxed usage text or a traceback (SPEC §3).
"""

from __future__ import annotations

import errno
import importlib
from collections.abc import Sequence
from difflib import get_close_matches
from typing import Annotated, NoReturn

import typer
from typer import _click as click
from typer.core import TyperArgument, TyperGroup
from typer.models import CommandInfo, TyperInfo

from agentworld.cli import output
from agentworld.cli.state import state

COMMANDS: dict[str, str] = {
    "send": "agentworld.cli.chats:send",
    "messages": "agentworld.cli.chats:messages",
    "resume": "agentworld.cli.resume:resume",
    "talk": "agentworld.cli.talk:talk",
    "serve": "agentworld.cli.serve:serve",
    "worker": "agentworld.cli.worker:worker",
    "tools": "agentworld.cli.tools:tools",
    "tool-logs": "agentworld.cli.tools:tool_logs",
    "pending": "agentworld.cli.tools:pending",
    "respond": "agentworld.cli.tools:respond",
    "approvals": "agentworld.cli.approvals:approvals",
    "approve": "agentworld.cli.approvals:approve",
    "audit": "agentworld.cli.approvals:audit",
    "usage": "agentworld.cli.usage:usage",
    "questions": "agentworld.cli.questions:questions",
    "answer": "agentworld.cli.questions:answer",
    "demo": "agentworld.cli.app:demo",
    "world": "agentworld.cli.worlds:app",
    "agent": "agentworld.cli.agents:app",
    "chat": "agentworld.cli.chats:app",
    "message": "agentworld.cli.messages_edit:app",
    "policy": "agentworld.cli.policy:app",
    "apply": "agentworld.cli.world_files:apply",
    "export": "agentworld.cli.world_files:export",
    "init": "agentworld.cli.world_templates:init",
}
"""Every top-level command, in the order ``agentworld --help`` lists them: its name, and the
command function or sub-app (``module:attribute``) that runs it."""


class LazyGroup(TyperGroup):
    """The top-level group: a command is built from ``COMMANDS`` the first time it is asked
    for (click's ``get_command``/``list_commands`` hooks), so a command line imports the
    module of the command it runs and no other."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            self.commands[cmd_name] = plain_usage(_build(cmd_name))
        return self.commands.get(cmd_name)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        """As typer resolves it, with the names of every command (not only those built) for
        its "Did you mean" hint."""
        try:
            return self._click_resolve_command(ctx, args)
        except typer.TyperException as exc:  # click's UsageError
            if self.suggest_commands and args and (matches := get_close_matches(args[0], list(COMMANDS))):
                suggestions = ", ".join(f"{match!r}" for match in matches)
                exc.message = f"{exc.message.rstrip('.')}. Did you mean {suggestions}?"
            raise


def _build(name: str) -> click.Command:
    """The click command ``name`` is, built by typer as ``app.command``/``app.add_typer``
    would have built it."""
    module, _, attribute = COMMANDS[name].partition(":")
    target = getattr(importlib.import_module(module), attribute)
    if isinstance(target, typer.Typer):
        return typer.main.get_group_from_info(
            TyperInfo(target, name=name, options_metavar="[OPTIONS]"),
            pretty_exceptions_short=app.pretty_exceptions_short,
            suggest_commands=app.suggest_commands,
            rich_markup_mode=app.rich_markup_mode,
        )
    return typer.main.get_command_from_info(
        CommandInfo(name, callback=target),
        pretty_exceptions_short=app.pretty_exceptions_short,
        rich_markup_mode=app.rich_markup_mode,
    )


app = typer.Typer(
    name="agentworld",
    cls=LazyGroup,
    help="Worlds of LLM agents that talk by @mention, use tools and ask before risky actions.",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
)


def _print_version(wanted: bool) -> None:
    if not wanted:
        return
    from importlib.metadata import PackageNotFoundError, version

    try:
        number = version("agentworld")
    except PackageNotFoundError:  # running from a source tree that was never installed
        number = "unknown"
    typer.echo(f"agentworld {number}")
    raise typer.Exit()


@app.callback()
def _global(
    db: Annotated[
        str | None,
        typer.Option(
            "--db",
            envvar="AGENTWORLD_DB",
            help="Database URL: sqlite:///FILE, a file path or postgresql://… (also after the command).",
        ),
    ] = None,
    version: Annotated[
        bool,
        typer.Option("--version", callback=_print_version, is_eager=True, help="Print the version and exit."),
    ] = False,
) -> None:
    if db is not None and not db.strip():  # an unset shell variable: never the default database
        output.fail("--db is empty; give a database URL or file path", code=2)
    state["db"] = db


def demo() -> None:
    """Run a self-contained offline demo (no API key, nothing outside a temp dir)."""
    import asyncio

    from agentworld.cli.common import tune_collector, warn_if_no_sandbox_here
    from agentworld.cli.demo import run_demo

    warn_if_no_sandbox_here()
    tune_collector()
    asyncio.run(run_demo())


_CLICK_PHRASES = {
    "Input should be a valid integer, unable to parse string as an integer": "not an integer",
    "Input should be a valid number, unable to parse string as a number": "not a number",
}


def usage_error_line(exc: typer.TyperException) -> str:
    """A command-line mistake as one line that names the flag: ``--turn-limit: 'abc' is not
    an integer``, ``--turn-limit must be ≥ 1``, ``missing option '--provider'``."""
    message = exc.format_message()
    param = getattr(exc, "param", None)
    if isinstance(exc, typer.BadParameter) and param is not None and type(exc) is typer.BadParameter:
        if param.param_type_name == "option" and param.opts:
            name = max(param.opts, key=len)
        else:
            name = (param.human_readable_name or "").strip("{}").upper()
        message = _CLICK_PHRASES.get(exc.message, exc.message)
        message = f"{name} {message}" if message.startswith("must ") else f"{name}: {message}"
    message = message.rstrip(".")
    return message[:1].lower() + message[1:]


class _PlainArgument(TyperArgument):
    """An argument as usage lines and errors name it: ``WORLD NAME``, ``[WORLD]`` when
    optional, always upper case. Typer writes a required one as ``{WORLD}``, which reads as a
    set or a template to fill in, and one without a metavar in lower case."""

    @property
    def display_name_raw(self) -> str:
        return (self.metavar or self.name or "").upper()

    def _usage_display_name(self) -> str:
        name = self.display_name_raw if self.required else f"[{self.display_name_raw}]"
        return name if self.nargs == 1 else f"{name}..."


def plain_usage(command: click.Command) -> click.Command:
    """Give every argument of ``command`` and its sub-commands the plain usage form. Typer
    builds the parameters itself, so their class is set once the tree is built."""
    for param in command.params:
        if isinstance(param, TyperArgument):
            param.__class__ = _PlainArgument
    for sub in getattr(command, "commands", {}).values():
        plain_usage(sub)
    return command


def run_command_line(args: Sequence[str]) -> None:
    """Run ``args`` (global options in front, ``entry.place_global_options``) through the
    command tree: exit 0, or one ``error: …`` line on stderr with exit 1 (2 for a malformed
    command line). An error of writing standard output is raised for ``entry`` to report."""
    command = plain_usage(typer.main.get_command(app))
    try:
        code = command.main(list(args), prog_name="agentworld", standalone_mode=False)
    except typer.TyperException as exc:
        if type(exc).__name__ == "NoArgsIsHelpError":  # a group typed alone: show its help
            # The error was built from the help; rich help is printed as it is built, and
            # then the message is empty: either way the help shows once.
            if help_text := exc.format_message().strip():
                typer.echo(help_text)
            raise SystemExit(2) from None
        output.fail(usage_error_line(exc), code=getattr(exc, "exit_code", 2))
    except typer.Abort:
        output.fail("aborted", code=1)
    except OSError as exc:
        if exc.errno not in _OUTPUT_ERRNOS:
            _unexpected(exc)
        raise  # writing the output failed: ``entry`` says so
    except Exception as exc:  # a failure nobody foresaw is still one line, never a traceback
        _unexpected(exc)
    if code == 130:  # typer's silent exit for a Ctrl-C outside a command's run: said as ours
        output.fail("interrupted", code=130)
    raise SystemExit(code if isinstance(code, int) else 0)


_OUTPUT_ERRNOS = frozenset({errno.ENOSPC, errno.EPIPE, errno.EFBIG, errno.EDQUOT, errno.EIO})
"""Errors of writing standard output: every other ``OSError`` a command meets (a file it
reads, a directory it makes) is turned into its own message where it happens."""


def _unexpected(exc: Exception) -> NoReturn:
    import logging

    logging.getLogger("agentworld.cli").debug("unexpected error", exc_info=True)
    output.fail(f"unexpected {type(exc).__name__}: {exc} (AGENTWORLD_LOG=debug shows where)")

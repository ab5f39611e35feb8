"""``agentworld messages`` and ``agentworld approvals`` answered without the full command line's
start-up.

Reading a transcript and the approvals waiting are what people and scripts run most, and the
full path pays for typer's command tree, SQLAlchemy and pydantic before it reads a row
(0.6-1 s; issue 18 asks for 0.25 s). This answers their plain, successful cases from a bare
``sqlite3`` connection (``storage.sqlite_reads``) with the same output, byte for byte
(tests/cli/test_cli_quick.py runs both paths on the same databases).

It answers only what it can answer exactly: the command line must be one of the forms below,
word for word, and the database a current SQLite file holding the world, chat and agent
named, with something to show. Everything else — ``--help``, another option, a missing
world, an empty chat, PostgreSQL, an older schema, a world whose runtime would have work to
take up — returns None and goes to the full command line, which gives its usual output or
error.

    [--db URL] messages WORLD [--chat ID] [--agent NAME] [--json]
    [--db URL] approvals WORLD [--chat ID] [--json]
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

Answered = Literal["messages", "approvals"]
_OPTIONS: dict[Answered, tuple[str, ...]] = {"messages": ("--chat", "--agent"), "approvals": ("--chat",)}


@dataclass(frozen=True, slots=True)
class QuickCommand:
    name: Answered
    db: str | None
    world: str
    chat: str | None
    agent: str | None
    json_out: bool


def answer(args: Sequence[str]) -> int | None:
    """The exit status once the command is answered here, or None to leave it to the full
    command line (nothing has been printed then)."""
    command = parse(args)
    if command is None:
        return None
    from agentworld.storage import sqlite_reads

    with _current_file(command.db) as conn:
        if conn is None:
            return None
        try:
            if command.name == "messages":
                return _messages(conn, command)
            return _approvals(conn, command)
        except (sqlite_reads.Unreadable, sqlite3.Error, ValueError):
            # A row in a shape it does not know, a busy or damaged file: the full path reads
            # it, or says what is wrong with it.
            return None


def stored_world_spelling(db: str | None, name: str) -> str | None:
    """The stored spelling of the world ``name`` names regardless of case (``name`` itself
    when no world has it), read straight from the SQLite file ``db`` names; None when only
    the full path can tell: not a SQLite file at the current schema, or unreadable."""
    from agentworld.storage import sqlite_reads

    with _current_file(db) as conn:
        if conn is None:
            return None
        try:
            found = sqlite_reads.world_named(conn, name)
        except (sqlite_reads.Unreadable, sqlite3.Error, ValueError):
            return None
    return name if found is None else found[0]


@contextmanager
def _current_file(db: str | None) -> Iterator[sqlite3.Connection | None]:
    """A connection to the SQLite file ``db`` names if it is at the current schema, closed
    after; None for anything only the full path reads (``sqlite_reads.open_current``)."""
    from agentworld.storage import sqlite_reads

    path = _database_file(db)
    conn = None if path is None else sqlite_reads.open_current(path)
    try:
        yield conn
    finally:
        if conn is not None:
            conn.close()


def parse(args: Sequence[str]) -> QuickCommand | None:
    """The command if ``args`` (global options already in front, see ``entry``) are exactly
    one of the forms this module answers, else None."""
    words = list(args)
    db: str | None = None
    if words[:1] == ["--db"] and len(words) >= 2:
        db, words = words[1], words[2:]
    elif words and words[0].startswith("--db="):
        db, words = words[0].removeprefix("--db="), words[1:]
    if len(words) < 2 or words[1].startswith("-"):
        return None
    name = next((answered for answered in _OPTIONS if answered == words[0]), None)
    if name is None:
        return None
    world, rest = words[1], words[2:]
    allowed = _OPTIONS[name]
    values: dict[str, str] = {}
    json_out = False
    index = 0
    while index < len(rest):
        word = rest[index]
        option, equals, value = word.partition("=")
        if word == "--json" and not json_out:
            json_out = True
        elif option in allowed and option not in values and equals:
            values[option] = value
        elif word in allowed and word not in values and index + 1 < len(rest):
            index += 1
            values[word] = rest[index]
        else:
            return None
        index += 1
    if any(not value or value.startswith("-") for value in values.values()):
        return None
    if db is None:
        db = os.environ.get("AGENTWORLD_DB")
    if db is not None and not db.strip():
        return None  # an empty --db is refused, an empty variable ignored: the full path's call
    return QuickCommand(name, db, world, values.get("--chat"), values.get("--agent"), json_out)


def _database_file(db: str | None) -> Path | None:
    """The SQLite file ``--db`` names, as the full path resolves it; None for anything else
    (PostgreSQL, a memory database, a URL it would refuse)."""
    from agentworld.errors import AgentWorldError
    from agentworld.storage.url import (
        check_command_line_database,
        resolve_database_url,
        sqlite_file,
    )

    try:
        url = resolve_database_url(db)
        check_command_line_database(url)
    except AgentWorldError:
        return None
    return sqlite_file(url)


def _messages(conn: sqlite3.Connection, command: QuickCommand) -> int | None:
    from agentworld.storage import sqlite_reads

    world = sqlite_reads.world_named(conn, command.world)
    if world is None:
        return None
    name, settings = world
    chat_id = command.chat if command.chat is not None else settings.get("current_chat_id")
    if chat_id is not None and not isinstance(chat_id, str):
        return None
    owner: str | None = None  # the agent as its name was spelled when created, for the JSON
    if command.agent is not None:
        if command.chat is not None and not sqlite_reads.chat_exists(conn, name, command.chat):
            return None
        owner = sqlite_reads.agent_named(conn, name, command.agent)
        if owner is None:
            return None
        found = sqlite_reads.memory(conn, name, owner, command.chat)
    else:
        if chat_id is None or not sqlite_reads.chat_exists(conn, name, chat_id):
            return None
        found = sqlite_reads.transcript(conn, name, chat_id)
    if not found:
        return None  # "no messages yet" names a next step, which the full path works out

    from agentworld.cli import output

    if command.json_out:
        document = {"chatId": chat_id, "agent": owner, "messages": [m.to_json() for m in found]}
        output.print_json(document)
    else:
        output.print_messages(found)
    return 0


def _approvals(conn: sqlite3.Connection, command: QuickCommand) -> int | None:
    """The full path opens the world's runtime first, which takes up what stopped processes
    left (``WorldRuntime.resume_stopped_work``); answered here only when that would do
    nothing."""
    from agentworld.storage import sqlite_reads

    world = sqlite_reads.world_named(conn, command.world)
    if world is None:
        return None
    name, settings = world
    timeout = settings.get("approval_timeout")
    if not isinstance(timeout, int | float) or isinstance(timeout, bool):
        return None
    if command.chat is not None and not sqlite_reads.chat_exists(conn, name, command.chat):
        return None
    if not sqlite_reads.world_is_settled(conn, name, timeout):
        return None
    found = [a for a in sqlite_reads.approvals(conn, name) if command.chat in (None, a.chat_id)]

    from agentworld.cli import output
    from agentworld.cli.state import state

    state["db"] = command.db  # the answer commands it prints name the same database
    if command.json_out:
        output.print_json({"approvals": [output.approval_doc(a) for a in found]})
    else:
        output.print_approvals(found, empty="no pending approvals")
    return 0

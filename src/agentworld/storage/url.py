"""Turn the user's ``--db`` value into a SQLAlchemy URL, and that into the driver we run on."""

from __future__ import annotations

import os
from pathlib import Path

from agentworld.errors import InvalidInputError

DB_ENV_VAR = "AGENTWORLD_DB"


def default_database_path() -> Path:
    return Path.home() / ".agentworld" / "agentworld.db"


def resolve_database_url(raw: str | None = None) -> str:
    """``sqlite:///f.db``, ``postgresql://…``, a bare file path, or None for the default.

    The result names the drivers we run on whatever spelling people wrote (``sqlite``: the
    stdlib driver, see ``sqlite_sync_url``; ``postgresql+asyncpg``), so the same value always
    gives the same URL. Older spellings (``sqlite+aiosqlite``) are still accepted.
    """
    value = raw or os.environ.get(DB_ENV_VAR) or ""
    if not value:
        return f"sqlite:///{default_database_path()}"
    if "://" not in value:
        return f"sqlite:///{Path(value).expanduser().absolute()}"
    scheme, rest = value.split("://", 1)
    match scheme:
        case "sqlite" | "sqlite+pysqlite" | "sqlite+aiosqlite":
            return f"sqlite://{rest}"
        case "postgresql" | "postgres" | "postgresql+asyncpg":
            return f"postgresql+asyncpg://{rest}"
        case _:
            raise InvalidInputError(
                f"unsupported database URL scheme {scheme!r}: use sqlite:///PATH or postgresql://…"
            )


def sqlite_file(url: str) -> Path | None:
    """The file behind a SQLite URL (None for memory databases and other backends)."""
    if not url.startswith("sqlite"):
        return None
    path = url.split("://", 1)[1][1:]
    if not path or path == ":memory:":
        return None
    return Path(path)


def check_command_line_database(url: str) -> None:
    """Refuse a ``--db`` that would lose what a command stores, or put it where nobody asked.

    Each ``agentworld`` command is its own process, so an in-memory SQLite database
    (``sqlite://``, ``sqlite:///``, ``sqlite:///:memory:``) would start empty every time and
    save nothing. A missing directory is created only for the default location
    (``~/.agentworld``); anywhere else it is most likely a typo, so it is an error.
    """
    if not url.startswith("sqlite"):
        return
    path = sqlite_file(url)
    if path is None:
        raise InvalidInputError(
            "--db: an in-memory SQLite database saves nothing between commands; "
            "give a file, e.g. sqlite:///PATH/agentworld.db"
        )
    if path.is_dir():
        raise InvalidInputError(f"--db: {path} is a directory, not a database file")
    directory = path.parent
    if not directory.is_dir() and directory != default_database_path().parent:
        what = "is not a directory" if directory.exists() else "does not exist"
        raise InvalidInputError(f"--db: the directory {directory} {what}")


def sqlite_sync_url(url: str) -> str:
    """The stdlib-driver (``sqlite+pysqlite``) form of a SQLite URL, which storage runs on."""
    scheme, rest = url.split("://", 1)
    if not scheme.startswith("sqlite"):
        raise InvalidInputError(f"not a SQLite URL: {scheme}://…")
    return f"sqlite+pysqlite://{rest}"

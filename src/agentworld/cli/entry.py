"""The ``agentworld`` program: where a command line starts.

Most command lines go to the typer command tree (``cli.app``). The transcript listing is
answered first, if it can be, by ``cli.quick``, which needs neither typer nor the storage
stack; so this module imports nothing heavy itself.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> None:
    """The ``agentworld`` command: exit 0, or one ``error: …`` line on stderr with exit 1 (2 for
    a malformed command line)."""
    _configure_logging()
    args = place_global_options(sys.argv[1:] if argv is None else argv)
    from agentworld.cli import quick

    code = quick.answer(args)
    if code is not None:
        raise SystemExit(code)
    from agentworld.cli.app import run_command_line

    run_command_line(args)


def _configure_logging() -> None:
    """``AGENTWORLD_LOG=debug`` (or info, warning …) logs to stderr; a value that is no level
    is reported and ignored, so it cannot break every command."""
    import logging
    import os

    level = os.environ.get("AGENTWORLD_LOG", "").strip().upper()
    if not level:
        return
    if level not in logging.getLevelNamesMapping() and not level.isdigit():
        sys.stderr.write(
            f"warning: AGENTWORLD_LOG={level.lower()!r} is not a log level "
            "(debug, info, warning, error, critical); logging stays off\n"
        )
        return
    logging.basicConfig(
        level=int(level) if level.isdigit() else level,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )


def place_global_options(args: Sequence[str]) -> list[str]:
    """Accept the global options where people type them: ``--db URL`` after the command
    (``agentworld world list --db x.db``) moves in front of it, and ``--json`` before it
    (``agentworld --json world list``) moves to its end. Nothing after ``--`` is touched."""
    args = list(args)
    end = args.index("--") if "--" in args else len(args)
    head, tail = args[:end], args[end:]
    front: list[str] = []
    rest: list[str] = []
    json_flag = False
    in_front = True
    index = 0
    while index < len(head):
        token = head[index]
        if in_front and not token.startswith("-"):
            in_front = False  # the command: what follows belongs to it
        if token == "--db" and index + 1 < len(head):
            front += head[index : index + 2]
            index += 2
            continue
        if token.startswith("--db="):
            front.append(token)
        elif in_front and token == "--json":
            json_flag = True
        else:
            (front if in_front else rest).append(token)
        index += 1
    return front + rest + (["--json"] if json_flag else []) + tail

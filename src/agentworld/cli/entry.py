"""The ``agentworld`` program: where a command line starts.

It sets up logging and traces, checks that standard output is open, puts the global options where the
command tree expects them, and runs the command line (``cli.app``); an error of writing the
output ends as one line. The command tree is imported here, inside ``main``, so a Ctrl-C while
it loads ends the command like any other Ctrl-C before work began: ``error: interrupted``,
exit 130 (nothing was stored), never a traceback.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import NoReturn


def main(argv: Sequence[str] | None = None) -> None:
    """The ``agentworld`` command: exit 0, or one ``error: …`` line on stderr with exit 1 (2 for
    a malformed command line, 130 for Ctrl-C)."""
    try:
        _configure_logging()
        _configure_tracing()
        if sys.stdout is None:  # started with ``1>&-``: whatever it printed would be lost unseen
            _fail("standard output is closed; to discard the output, send it to /dev/null")
        args = place_global_options(sys.argv[1:] if argv is None else argv)
        run_command_line = _command_tree()
        run_command_line(args)
    except OSError as exc:  # only errors of writing the output come this far
        output_failed(exc)
    except KeyboardInterrupt:
        _fail("interrupted", code=130)


def _command_tree() -> Callable[[Sequence[str]], None]:
    """``cli.app.run_command_line``, imported with Ctrl-C held back until the import is done:
    an import cut short can fail in ways other than ``KeyboardInterrupt`` (a class half made),
    which would be reported as an unexpected error."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():  # signals are the main thread's
        from agentworld.cli.app import run_command_line

        return run_command_line
    pressed: list[int] = []
    before = signal.signal(signal.SIGINT, lambda number, _frame: pressed.append(number))
    try:
        from agentworld.cli.app import run_command_line
    finally:
        signal.signal(signal.SIGINT, before)
    if pressed:
        raise KeyboardInterrupt
    return run_command_line


def output_failed(exc: OSError) -> NoReturn:
    """Standard output could not be written (a full disk, a closed pipe): one line on
    stderr, exit 1; a reader that went away (``| head``) needs no line. Standard output is
    pointed at /dev/null first, so the exit's own flush does not fail a second time."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    if isinstance(exc, BrokenPipeError):
        raise SystemExit(1)
    _fail(f"cannot write the output: {exc.strerror or exc}")


def _fail(reason: str, *, code: int = 1) -> NoReturn:
    if sys.stderr is not None:
        sys.stderr.write(f"error: {reason}\n")
    raise SystemExit(code)


def _configure_tracing() -> None:
    """Send traces where ``OTEL_EXPORTER_OTLP_ENDPOINT`` points (``agentworld.tracing``); without
    it nothing of OpenTelemetry is loaded."""
    from agentworld.tracing import setup_tracing

    setup_tracing()


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
        if token == "--db":
            if index + 1 == len(head):
                _fail("--db needs a value: a database URL or file path", code=2)
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

"""``agentworld worker``: run chats on Temporal (SPEC S1) until SIGTERM or Ctrl-C.

Needs ``AGENTWORLD_TEMPORAL`` (the service's ``HOST:PORT``) and the database every process of
the deployment shares. Temporal and the worker engine are imported only here.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from typing import Annotated, NoReturn

import typer

from agentworld.cli import output
from agentworld.cli.common import check_database, state


def worker(
    queue: Annotated[list[str] | None, typer.Option("--queue", help="Also serve this task queue: the workerQueue of worlds whose working directory is on this host (repeatable).")] = None,
) -> None:
    """Run chats' work for a deployment on Temporal (AGENTWORLD_TEMPORAL) until stopped."""
    from agentworld.errors import AgentWorldError
    from agentworld.runtime.engine import ADDRESS_VARIABLE, TemporalSettings

    settings = TemporalSettings.from_env()
    if settings is None:
        output.fail(f"{ADDRESS_VARIABLE} is not set: a worker needs the Temporal service's HOST:PORT")
    try:
        check_database(state["db"])
    except AgentWorldError as exc:
        output.fail(str(exc))
    from agentworld.temporal_worker import run_worker

    async def until_stopped() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)

        def ready(queues: list[str]) -> None:
            sys.stderr.write(f"agentworld worker on {settings.address}, queues: {', '.join(queues)}\n")
            sys.stderr.flush()

        await run_worker(state["db"], settings, queue or (), stop=stop, on_ready=ready)

    code = 0
    try:
        asyncio.run(until_stopped())
    except AgentWorldError as exc:
        sys.stderr.write(f"error: {output.one_line(str(exc))}\n")
        code = 1
    else:
        sys.stderr.write("agentworld worker stopped\n")
    _exit(code)


def _exit(code: int) -> NoReturn:
    """End the process now, its spans sent and its output flushed: the Temporal SDK's native
    threads can abort an interpreter that shuts down after a client was made (SIGABRT in
    place of the exit status)."""
    from agentworld import tracing

    tracing.flush()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)

"""Ctrl-C (SIGINT) while a command runs (SPEC K3): stop is stop.

While ``send``, ``approve``, ``answer`` or ``respond`` runs its chat, the first Ctrl-C stops that
chat's turn as ``/stop`` does (``run_results.StopRequest``: a running tool killed and recorded
interrupted, the chat's queued work dropped, the stop noted in the transcript); the command then
prints what was produced and exits 130. Before the run is under way (start-up, checks: nothing
stored yet) and in every other command, it ends the command as it is, with 130. A second Ctrl-C
exits at once, with 130: a shell command still running dies with the process (its guard kills
its group when the process's end of the control pipe closes, ``tools/builtin/process_guard.py``),
and whatever was not recorded is found by the next process that runs the world.

The handler is a plain ``signal`` handler rather than the event loop's, so the second Ctrl-C
ends the process even while the loop is busy; the first one only schedules its work on the
loop. The stop itself is bounded (``run_results.STOP_SECONDS``), and so is all that follows
it, here: a database that does not answer holds every later read and the closing too, so a
command still alive ``FINISH_SECONDS`` after the first Ctrl-C exits as the second would.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator
from types import FrameType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentworld.run_results import StopRequest

INTERRUPTED_EXIT = 130
"""The exit status of a command ended by Ctrl-C (128 + SIGINT), as shells report it."""
FINISH_SECONDS = 20.0
"""How long a command may go on after the first Ctrl-C (the stop, reading what was produced,
printing it, closing) before it exits as a second Ctrl-C would."""


class CtrlC:
    """The SIGINT handler of one command: the first stops its run (or cancels ``task`` when
    no run is under way), the second exits at once."""

    def __init__(self, stop: StopRequest, loop: asyncio.AbstractEventLoop, task: asyncio.Task[Any]) -> None:
        self.stop = stop
        self.loop = loop
        self.task = task
        self.count = 0

    def __call__(self, _signum: int, _frame: FrameType | None) -> None:
        self.count += 1
        if self.count > 1:
            exit_at_once()
        # Only scheduled here: the handler runs between any two bytecodes of the loop's work.
        self.loop.call_soon_threadsafe(self._first)

    def _first(self) -> None:
        if self.stop.request():
            _say("note: stopping the chat's turn (Ctrl-C again to exit at once)\n")
        elif not self.task.done():
            self.task.cancel()
        late = threading.Timer(FINISH_SECONDS, exit_at_once, kwargs={"why": _TOO_LONG})
        late.daemon = True
        late.start()


_TOO_LONG = (
    f"interrupted; the command did not finish within {FINISH_SECONDS:g} s of Ctrl-C (the database "
    "did not answer); what it left is found by the next process that runs the world"
)


@contextlib.contextmanager
def handling_ctrl_c(stop: StopRequest) -> Iterator[CtrlC]:
    """Within the command's main task: Ctrl-C handled as the module docstring says. Once a
    stop was asked, Ctrl-C keeps exiting at once until the process ends (while the command
    prints what was produced); otherwise the handler before is put back."""
    handler = CtrlC(stop, asyncio.get_running_loop(), _current_task())
    if threading.current_thread() is not threading.main_thread():
        yield handler  # only the main thread may handle signals (a command run in a thread)
        return
    before = signal.signal(signal.SIGINT, handler)
    try:
        yield handler
    finally:
        if handler.count:
            signal.signal(signal.SIGINT, lambda _s, _f: exit_at_once())
        else:
            signal.signal(signal.SIGINT, before)


def exit_at_once(why: str = "interrupted") -> None:
    """End the process now with 130: no cleanup waits (a hung database, a slow stop)."""
    _say(f"error: {why}\n")
    os._exit(INTERRUPTED_EXIT)


def _say(text: str) -> None:
    """A line on stderr written directly (a signal handler may not take the stream's lock)."""
    if sys.stderr is None:
        return
    with contextlib.suppress(OSError, ValueError):
        fd = sys.stderr.fileno()
        # On a terminal the line starts after the ``^C`` it echoed.
        os.write(fd, (("\n" if os.isatty(fd) else "") + text).encode())


def _current_task() -> asyncio.Task[Any]:
    task = asyncio.current_task()
    assert task is not None, "handling_ctrl_c is entered in a task"
    return task

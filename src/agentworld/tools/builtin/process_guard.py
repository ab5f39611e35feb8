"""A guard between the runtime and a shell command, so that the command dies with its runner.

A command started in a session of its own outlives the process that started it: when the
runtime is killed (``kill -9``, the OOM killer), nobody kills the command's process group, and
``sleep 3 && touch F`` still creates ``F``. The kernel has no "kill my children's group when I
die" switch (``PR_SET_PDEATHSIG`` reaches one process, not its group, and fires when the
*thread* that forked ends), but it does close every file a dead process held, whatever killed
it. So the runtime starts this guard with its standard input on a pipe whose write end only
the runtime holds (the control pipe). The guard starts the command in a new session, so in a
process group of its own, and waits for the first of:

- the command exits: the guard kills what is left of its process group (background jobs
  such as ``sleep 100 &`` or ``cat fifo >/dev/null 2>&1 &`` never outlive the call), then ends
  the same way (the same exit code, or killed by the same signal), so the runtime sees what it
  saw when it ran the command itself. The command is seen to end with ``waitid(WNOWAIT)`` and
  reaped only after the kill, so its group's id cannot meanwhile name another process's group;
- end of file on the control pipe — the runtime died, however it died, or closed the pipe to
  stop the command (a timeout, a cancelled call) — or a signal asking the guard to end: the
  guard kills the command's whole process group with SIGKILL at once and ends as the command
  then did.

A process that leaves the group on purpose (``setsid``, a daemon's double fork) escapes the
group kill. In the sandbox (``tools/sandbox.py``) the PID namespace contains those. Without one
the runtime asks the guard to reap (``REAP``): the guard makes itself its descendants' child
subreaper (``PR_SET_CHILD_SUBREAPER``), so such a process, orphaned when its parent ends, becomes
the guard's child; once the command has ended the guard kills every child it adopted, and their
own children as they are handed to it in turn. A process that escapes while its parent still
lives is reached when that parent is killed.

Nothing slips between starting the command and watching it: the guard's signal handlers are
in place before the command is spawned, the command leads its own process group from its first
instruction, and an end of file stays readable until the guard looks.

The command's environment travels on the control pipe, ahead of the end of file, rather than
in the guard's own environment: Python edits its environment at start-up (PEP 538 adds
``LC_CTYPE`` under the C locale), and the command must get exactly the environment it was
given.

The guard runs on every shell call, so its start-up is kept short: the runtime runs this file
as a script of an isolated interpreter without site-packages (``python -I -S``), and as a
script it imports only modules built into the interpreter.
"""

from __future__ import annotations

import os
import select
import sys

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing slows the guard's start-up
if TYPE_CHECKING:
    import signal
    from collections.abc import Mapping, Sequence
    from types import FrameType
    from typing import NoReturn
else:
    # The public `signal` module wraps these functions in enums whose import would slow the
    # guard's start-up (benchmarks/README.md).
    import _signal as signal

CONTROL = 0
"""The guard's end of the control pipe: its standard input."""

RESET_SIGNALS = ("SIGPIPE", "SIGXFSZ")
"""Signals Python ignores at start-up; reset for the command, as ``subprocess`` does."""
STOP_SIGNALS = ("SIGTERM", "SIGHUP", "SIGINT")
"""Signals that end the guard the way end of file on the control pipe does. Handlers are
reset when the command is executed, so it gets the defaults (or an inherited "ignore")."""
KILLED = 9
"""The wait status of a process killed by SIGKILL (the signal's number, no exit code)."""
REAP = "--reap"
"""The guard's first argument when it is to adopt and kill what leaves the command's group."""
PR_SET_CHILD_SUBREAPER = 36
ADOPTION_ROUNDS = 1000
"""Most rounds of killing adopted processes (each round's kills hand their children over)."""
_WAITID = getattr(os, "waitid", None)
_REAPED = [0]
"""The wait status ``_ended`` read where it had to reap the command to see it end."""


# -- the runtime's side ----------------------------------------------------------------


def guarded_command(argv: Sequence[str], *, reap: bool = False) -> list[str]:
    """The command line that runs ``argv`` under a guard; ``reap``: the guard also kills what
    left the command's process group (for a command no sandbox contains).

    ``-I`` ignores ``PYTHON*`` variables, the user's site directory and the current
    directory; ``-S`` skips site-packages, which shortens the guard's start-up.
    """
    return [sys.executable, "-I", "-S", os.path.abspath(__file__), *([REAP] if reap else []), *argv]


def environment_block(environment: Mapping[str, str]) -> bytes:
    """What the runtime writes on the control pipe: the command's environment, sized.

    A length line, then ``NAME=value`` entries separated by NUL bytes (which neither a name
    nor a value can hold). Names and values ``subprocess`` would refuse are refused here too.
    """
    entries: list[bytes] = []
    for name, value in environment.items():
        entry = os.fsencode(name) + b"=" + os.fsencode(value)
        if not name or "=" in name or b"\0" in entry:
            raise ValueError(f"illegal environment variable {name!r}")
        entries.append(entry)
    block = b"\0".join(entries)
    return b"%d\n" % len(block) + block


# -- the guard's side ------------------------------------------------------------------


def _read_environment() -> dict[bytes, bytes] | None:
    """The command's environment from the control pipe, or None when the pipe ended first."""
    data = bytearray()
    size: int | None = None
    while size is None or len(data) < size:
        chunk = os.read(CONTROL, 65536)
        if not chunk:
            return None
        data += chunk
        if size is None and b"\n" in data:
            header, _, rest = bytes(data).partition(b"\n")
            size, data = int(header), bytearray(rest)
    entries = bytes(data).split(b"\0") if data else []
    return {name: value for name, _, value in (entry.partition(b"=") for entry in entries)}


def _note(number: int, frame: FrameType | None) -> None:
    """A signal handler that does nothing: the wakeup pipe carries the signal's number."""


def _signals(names: Sequence[str]) -> list[int]:
    return [getattr(signal, name) for name in names if hasattr(signal, name)]


def _spawn(argv: list[str], environment: dict[bytes, bytes]) -> int:
    """Start the command in a new session, with ``/dev/null`` as its standard input and
    Python's ignored signals back to their defaults, as ``subprocess`` started it before."""
    stdin = [(os.POSIX_SPAWN_OPEN, CONTROL, os.devnull, os.O_RDONLY, 0)]
    reset = _signals(RESET_SIGNALS)
    try:
        return os.posix_spawn(
            argv[0], argv, environment, file_actions=stdin, setsigdef=reset, setsid=True
        )
    except NotImplementedError:  # no POSIX_SPAWN_SETSID: a process group of its own suffices
        return os.posix_spawn(
            argv[0], argv, environment, file_actions=stdin, setsigdef=reset, setpgroup=0
        )


def _kill_group(pgid: int) -> None:
    # Not contextlib.suppress: importing contextlib slows the guard's start-up.
    try:  # noqa: SIM105
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _ended(pid: int) -> bool:
    """Whether the command has ended, leaving it unreaped (``WNOWAIT``): while it is a zombie
    its pid, which is its process group's id, cannot be given to another process."""
    if _WAITID is None:  # no waitid here: reap, and kill the group right after
        done, _REAPED[0] = os.waitpid(pid, os.WNOHANG)
        return done != 0
    return _WAITID(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None


def _watch(pid: int, wakeup: int) -> int:
    """Wait for the command to exit, or for word to stop it; then kill its whole process
    group (what it left running in the background, or all of it) and return its wait status."""
    while True:
        ready, _, _ = select.select([CONTROL, wakeup], [], [])
        if CONTROL in ready and not os.read(CONTROL, 4096):
            break  # end of file: the runtime died, or closed the pipe to stop the command
        if wakeup in ready and set(os.read(wakeup, 64)) - {signal.SIGCHLD}:
            break  # a signal asked the guard itself to end
        if _ended(pid):
            break
    # Background jobs (``sleep 100 &``) never outlive the call; the command is not reaped
    # yet, so its process group id cannot have been reused.
    _kill_group(pid)
    try:
        return os.waitpid(pid, 0)[1]
    except ChildProcessError:  # reaped by the fallback of ``_ended``
        return _REAPED[0]


def _become_subreaper() -> bool:
    """Make orphaned descendants the guard's children (Linux); False where that cannot be."""
    try:
        import ctypes  # only an uncontained command's guard pays for loading it

        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def _children() -> list[int]:
    """The guard's living children, from ``/proc`` (adopted orphans among them)."""
    me = os.getpid()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as stat:
                fields = stat.read().rpartition(b")")[2].split()
        except OSError:
            continue  # gone meanwhile
        if len(fields) > 2 and int(fields[1]) == me and fields[0] != b"Z":
            found.append(int(name))
    return found


def _kill_adopted() -> None:
    """Kill the processes the guard adopted, and theirs as they are handed over, then reap them."""
    for _ in range(ADOPTION_ROUNDS):
        adopted = _children()
        if not adopted:
            break
        for pid in adopted:
            try:  # noqa: SIM105
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for pid in adopted:
            try:  # noqa: SIM105
                os.waitpid(pid, 0)  # its own children are the guard's once it is gone
            except ChildProcessError:
                pass
    while True:  # zombies of orphans that ended on their own
        try:
            if os.waitpid(-1, os.WNOHANG)[0] == 0:
                break
        except ChildProcessError:
            break


def _end_like(status: int) -> NoReturn:
    """Exit with the command's exit code, or die of the signal that killed it."""
    if os.WIFSIGNALED(status):
        import resource  # built in, and only needed here

        number = os.WTERMSIG(status)
        # A command that dumped core did so itself; the guard dying of the same signal must not.
        resource.setrlimit(resource.RLIMIT_CORE, (0, resource.getrlimit(resource.RLIMIT_CORE)[1]))
        if number != signal.SIGKILL:
            signal.signal(number, signal.SIG_DFL)
        signal.raise_signal(number)
        os._exit(128 + number)  # not reached: the signal's default action ends the guard
    os._exit(os.waitstatus_to_exitcode(status))


def main(argv: list[str]) -> NoReturn:
    """Run ``argv`` as a guarded command (see the module docstring)."""
    reap = bool(argv) and argv[0] == REAP and _become_subreaper()
    if argv and argv[0] == REAP:
        argv = argv[1:]
    os.set_blocking(CONTROL, True)
    environment = _read_environment()
    if environment is None:  # the runtime was gone before the command could start
        _end_like(KILLED)
    wakeup, wakeup_write = os.pipe()
    os.set_blocking(wakeup_write, False)
    signal.set_wakeup_fd(wakeup_write)
    signal.signal(signal.SIGCHLD, _note)
    for number in _signals(STOP_SIGNALS):
        if signal.getsignal(number) != signal.SIG_IGN:  # an ignored one stays ignored, as before
            signal.signal(number, _note)
    status = _watch(_spawn(argv, environment), wakeup)
    if reap:
        _kill_adopted()
    _end_like(status)


if __name__ == "__main__":
    main(sys.argv[1:])

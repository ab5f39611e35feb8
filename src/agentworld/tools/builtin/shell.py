"""``shell_cmd`` (SPEC T2): run a command line the way a user would in a terminal.

The line runs under ``bash --noprofile --norc -c``: bash is the shell the
policy's parser models (``agentworld.shell``), so the commands a rule judged are
the commands that run. ``/bin/sh`` is never used, because it may be dash, which
reads a line such as ``ls &>/dev/null touch P`` as two commands where bash sees
one. Bash (version 4 or later) is looked up once, by absolute path in trusted
directories; without it the tool refuses to run.

The process gets a clean environment (``tools/environment.py``): no API keys,
no ``BASH_ENV`` or exported functions, a sanitized ``PATH``, plus what the
world lists in ``tool_env``; the values of secret-named variables are masked
in what it prints, and the runtime's own ``/proc/<pid>/environ`` is kept from it
(``process_privacy.py``). ``directory`` must stay inside the world's working
directory (``check_directory`` lets the policy refuse a call before anyone is
asked to approve it). ``parameters`` are shell-quoted and appended, so they
arrive as literal arguments. The command runs in its own process group, under
a guard (``process_guard.py``) that kills the whole group, not just the shell,
when the shell exits (so background jobs end with the call), on timeout and when
the process running the tool dies, even of SIGKILL. Where the world's sandbox is
active (``ToolContext.containment``, SPEC C1) the guard runs bash inside
bubblewrap (``tools/sandbox.py``): the working directory the only writable place,
``$HOME`` hidden, no network unless the world allows it, and a PID namespace that
ends with the command; a world set to ``sandbox = "on"`` where none can be made
gets an error and nothing runs. Output is read from the call's own pipes, within
a bound once the command's group is gone, and cut beyond the cap with a note
saying how much was dropped. It requires approval by default
(``definitions.SHELL_TOOL``).
"""

from __future__ import annotations

import asyncio
import functools
import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentworld.process_secrets import key_variables
from agentworld.shell.split import command_line
from agentworld.tools.builtin import DEFAULT_TIMEOUT, MAX_TIMEOUT
from agentworld.tools.builtin.process_guard import environment_block, guarded_command
from agentworld.tools.confinement import OutsideWorkingDirectory, confined_path, working_root
from agentworld.tools.environment import (
    DEFAULT_PATH,
    redact_secrets,
    secret_values,
    tool_environment,
)
from agentworld.tools.process_privacy import keep_process_private
from agentworld.tools.registry import ToolContext
from agentworld.tools.sandbox import sandboxed_argv

OUTPUT_CAP = 64 * 1024
OUTPUT_GRACE = 2.0
"""Seconds the output is still read once the command's process group is gone: what a process
that left the group (``setsid``) still writes there is not waited for beyond it."""


class _CappedReader:
    """Keeps the first ``cap`` bytes of a stream and counts the rest, so memory stays bounded."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.kept = bytearray()
        self.dropped = 0

    async def drain(self, stream: asyncio.StreamReader) -> None:
        while chunk := await stream.read(65536):
            room = self.cap - len(self.kept)
            self.kept += chunk[:room]
            self.dropped += max(0, len(chunk) - room)

    def text(self) -> str:
        return self.kept.decode("utf-8", errors="replace")


BASH_CANDIDATES: tuple[str, ...] = (
    "/bin/bash",
    "/usr/bin/bash",
    "/usr/local/bin/bash",
    "/opt/homebrew/bin/bash",
)
"""Where bash is looked for, in order; never on the caller's ``PATH``, which a tool could write to."""
BASH_MIN_VERSION = 4


class BashUnavailable(RuntimeError):
    """No usable bash: ``shell_cmd`` refuses to run rather than fall back to ``/bin/sh``."""


@dataclass(frozen=True, slots=True)
class _BashLookup:
    path: str | None
    problem: str = ""


def bash_version(path: str) -> int | None:
    """The major version (``BASH_VERSINFO[0]``) of the bash at ``path``, or None if it is not one."""
    try:
        done = subprocess.run(
            [path, "--noprofile", "--norc", "-c", 'echo "${BASH_VERSINFO[0]}"'],
            env={"PATH": DEFAULT_PATH},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    answer = done.stdout.strip()
    return int(answer) if done.returncode == 0 and answer.isdigit() else None


@functools.cache
def _lookup_bash() -> _BashLookup:
    seen: list[str] = []
    for candidate in BASH_CANDIDATES:
        if not (os.path.isfile(candidate) and os.access(candidate, os.X_OK)):
            continue
        version = bash_version(candidate)
        if version is not None and version >= BASH_MIN_VERSION:
            return _BashLookup(candidate)
        seen.append(f"{candidate} (version {version})" if version is not None else f"{candidate} (not bash)")
    found = f"; found only {', '.join(seen)}" if seen else ""
    return _BashLookup(
        None,
        f"shell_cmd needs bash {BASH_MIN_VERSION} or later at one of {', '.join(BASH_CANDIDATES)}{found}; "
        "it never runs commands with /bin/sh",
    )


class SandboxUnavailable(RuntimeError):
    """The world asks for a sandbox (``sandbox = "on"``) and none can be made here."""


class _OutputPipe:
    """A pipe the command writes (``child_end``) and this call reads (``reader``), closed when
    the call ends whether it was read to its end or not: a process that escaped the command's
    group and still holds the write end cannot keep the call waiting."""

    def __init__(self) -> None:
        self.reader = asyncio.StreamReader()
        self._read_end, self.child_end = os.pipe()
        self._child_end_open = True
        self._transport: asyncio.ReadTransport | None = None

    async def __aenter__(self) -> _OutputPipe:
        # The file object owns the read end from here on: closing it (here, or the transport
        # closing it) is the only close, so no other file ever loses its descriptor number.
        pipe = os.fdopen(self._read_end, "rb", buffering=0)
        try:
            self._transport, _ = await asyncio.get_running_loop().connect_read_pipe(
                lambda: asyncio.StreamReaderProtocol(self.reader), pipe
            )
        except BaseException:  # a call cancelled as it starts
            pipe.close()
            self.close_child_end()
            raise
        return self

    def close_child_end(self) -> None:
        """Close this process's copy of the write end (once the child holds its own)."""
        if self._child_end_open:
            self._child_end_open = False
            os.close(self.child_end)

    async def __aexit__(self, *exc: object) -> None:
        self.close_child_end()
        if self._transport is not None:
            self._transport.close()
            # The transport closes its pipe in a callback of the loop's next step: yield to
            # it here, so a loop that ends with the call (``asyncio.run``) leaves no pipe open.
            await asyncio.sleep(0)


def find_bash() -> str:
    """The absolute path of a bash ≥ 4, looked up and version-checked once per process;
    raise ``BashUnavailable`` when there is none."""
    lookup = _lookup_bash()
    if lookup.path is None:
        raise BashUnavailable(lookup.problem)
    return lookup.path


def _directory(directory: str | None, working_dir: str | None) -> Path:
    if directory is not None and not isinstance(directory, str):
        raise OutsideWorkingDirectory(f"directory must be a string, not {type(directory).__name__}")
    try:
        return confined_path(directory or ".", working_dir)
    except OutsideWorkingDirectory as exc:
        raise OutsideWorkingDirectory(f"directory {exc}") from None


def check_directory(directory: str | None, working_dir: str | None) -> str | None:
    """Why ``shell_cmd`` would refuse ``directory`` in a world working in ``working_dir``
    (error text), or None when it lies inside.

    Pure apart from resolving symlinks, so authorization can refuse a call before a
    person is asked to approve it. Whether the directory exists is left to the run:
    an earlier command may create it.
    """
    try:
        _directory(directory, working_dir)
    except OutsideWorkingDirectory as exc:
        return str(exc)
    return None


def _working_directory(directory: str | None, context: ToolContext) -> Path:
    target = _directory(directory, context.working_dir)
    if not target.is_dir():
        shown = directory or str(working_root(context.working_dir))
        raise ValueError(f"directory {shown!r} does not exist")
    return target


async def run_shell(args: dict[str, Any], context: ToolContext) -> dict[str, Any]:
    line = command_line(args["command"], args.get("parameters"))
    cwd = _working_directory(args.get("directory"), context)
    timeout = min(float(args.get("timeout") or DEFAULT_TIMEOUT), MAX_TIMEOUT)
    contained = await context.containment_now()
    if contained.refuses:
        raise SandboxUnavailable(
            f"the world's sandbox setting is \"on\" and {contained.problem}; nothing ran"
        )
    bash = await asyncio.to_thread(find_bash)  # a cached lookup after the first call
    # An agent's key may sit in any variable (``--api-key-env LC_MYKEY``): never passed unless
    # the world lists it in ``tool_env``.
    env = tool_environment(os.environ, shell=bash, passed=context.tool_env, withheld=key_variables())
    argv = [bash, "--noprofile", "--norc", "-c", line]
    if contained.active:
        if "TMPDIR" in env:
            env["TMPDIR"] = "/tmp"  # the sandbox's private one; the outer one is hidden
        argv = sandboxed_argv(
            argv,
            writable=contained.writable,
            cwd=str(cwd),
            network=contained.network,
            home=env.get("HOME"),
            protected=context.protected,
            private=context.private,
            # The guard starts bubblewrap in a session of its own, with no terminal: kept in
            # that session, the sandbox dies with the group the guard kills, even mid-start.
            new_session=False,
        )
    keep_process_private()  # the command must not read this process's keys in /proc/<pid>/
    started = time.monotonic()
    out, err = _CappedReader(OUTPUT_CAP), _CappedReader(OUTPUT_CAP)
    # The guard starts the command in a new session (its own process group) and kills that
    # group when the command ends and when its standard input, the control pipe, ends: when
    # this process dies or closes it. The output pipes are this call's own, so it can stop
    # reading them whatever still holds their write ends.
    async with _OutputPipe() as stdout, _OutputPipe() as stderr:
        process = await asyncio.create_subprocess_exec(
            *guarded_command(argv, reap=not contained.active),
            cwd=cwd,
            env={},  # the guard's own; the command's environment travels on the control pipe
            stdin=asyncio.subprocess.PIPE,  # the control pipe: only this process holds its write end
            stdout=stdout.child_end,
            stderr=stderr.child_end,
            start_new_session=True,  # out of reach of signals sent to this process's group
        )
        stdout.close_child_end()
        stderr.close_child_end()
        assert process.stdin is not None
        process.stdin.write(environment_block(env))
        drains = asyncio.gather(out.drain(stdout.reader), err.drain(stderr.reader))
        timed_out = False
        try:
            try:
                await asyncio.wait_for(asyncio.shield(process.wait()), timeout)
            except TimeoutError:
                timed_out = True
                process.stdin.close()  # end of file on the control pipe: the guard kills the group
                await process.wait()
            # The command and its group are gone (a sandbox's whole PID namespace with them);
            # what is left to read is read within a bound, so a process that escaped the group
            # cannot hold the call open by holding its output.
            await asyncio.wait({drains}, timeout=OUTPUT_GRACE)
        except asyncio.CancelledError:
            process.stdin.close()
            await asyncio.gather(process.wait(), return_exceptions=True)
            raise
        finally:
            drains.cancel()
            await asyncio.gather(drains, return_exceptions=True)
    # Secrets are masked even when the world passed them on purpose: the output goes to the
    # transcript, the event log and the next model request.
    # An agent's key variable (``--api-key-env LLMX``) counts whatever its name says.
    secrets = secret_values(os.environ, names=key_variables())
    result: dict[str, Any] = {
        "command": line,
        "directory": str(cwd),
        "exit_code": process.returncode,
        "stdout": redact_secrets(out.text(), secrets, cut=bool(out.dropped)),
        "stderr": redact_secrets(err.text(), secrets, cut=bool(err.dropped)),
        "duration_ms": round((time.monotonic() - started) * 1000, 1),
    }
    if timed_out:
        result["timed_out"] = True
        result["error"] = f"command timed out after {timeout:g} s and was killed"
    for name, reader in (("stdout", out), ("stderr", err)):
        if reader.dropped:
            result[name] += f"\n[output truncated: {reader.dropped} more bytes not shown]"
    return result


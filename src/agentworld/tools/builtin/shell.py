"""``shell_cmd`` (SPEC T2): run a command line the way a user would in a terminal.

The command runs under ``/bin/sh -c`` so pipelines, redirections and ``&&``
work; ``parameters`` are shell-quoted and appended, so they arrive as literal
arguments. It runs in its own process group: on timeout the whole group is
killed, not just the shell. Output beyond the cap is cut, with a note saying
how much was dropped. It requires approval by default.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from pathlib import Path
from typing import Any

from agentworld.policy.shell import command_line
from agentworld.tools.registry import ApprovalSettings, Tool, ToolContext

DEFAULT_TIMEOUT = 60.0
MAX_TIMEOUT = 600.0
OUTPUT_CAP = 64 * 1024

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "command": {"type": "string", "description": "The command line to run, e.g. 'ls -la | head'."},
        "parameters": {
            "type": "array",
            "items": {"type": "string"},
            "description": "Extra arguments, appended to the command as literal (quoted) words.",
        },
        "directory": {
            "type": "string",
            "description": "Where to run; relative paths are inside the world's working directory.",
        },
        "timeout": {
            "type": "number",
            "exclusiveMinimum": 0,
            "maximum": MAX_TIMEOUT,
            "description": f"Seconds before the command is killed (default {DEFAULT_TIMEOUT:g}).",
        },
    },
    "required": ["command"],
    "additionalProperties": False,
}


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


def _working_directory(directory: str | None, context: ToolContext) -> Path:
    base = Path(context.working_dir or os.getcwd())
    target = base / directory if directory else base
    if not target.is_dir():
        raise ValueError(f"directory {str(target)!r} does not exist")
    return target


async def run_shell(args: dict[str, Any], context: ToolContext) -> dict[str, Any]:
    line = command_line(args["command"], args.get("parameters"))
    cwd = _working_directory(args.get("directory"), context)
    timeout = min(float(args.get("timeout") or DEFAULT_TIMEOUT), MAX_TIMEOUT)
    started = time.monotonic()
    process = await asyncio.create_subprocess_exec(
        "/bin/sh", "-c", line,
        cwd=cwd,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,  # its own process group, so a timeout kills every child too
    )
    out, err = _CappedReader(OUTPUT_CAP), _CappedReader(OUTPUT_CAP)
    assert process.stdout is not None and process.stderr is not None
    readers = asyncio.gather(out.drain(process.stdout), err.drain(process.stderr), process.wait())
    timed_out = False
    try:
        await asyncio.wait_for(asyncio.shield(readers), timeout)
    except TimeoutError:
        timed_out = True
        _kill_group(process.pid)
        await readers
    except asyncio.CancelledError:
        _kill_group(process.pid)
        await asyncio.gather(readers, return_exceptions=True)
        raise
    result: dict[str, Any] = {
        "command": line,
        "directory": str(cwd),
        "exit_code": process.returncode,
        "stdout": out.kept.decode("utf-8", errors="replace"),
        "stderr": err.kept.decode("utf-8", errors="replace"),
        "duration_ms": round((time.monotonic() - started) * 1000, 1),
    }
    if timed_out:
        result["timed_out"] = True
        result["error"] = f"command timed out after {timeout:g} s and was killed"
    for name, reader in (("stdout", out), ("stderr", err)):
        if reader.dropped:
            result[name] += f"\n[output truncated: {reader.dropped} more bytes not shown]"
    return result


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)


SHELL_TOOL = Tool(
    name="shell_cmd",
    description=(
        "Run a shell command line in the world's working directory and return its stdout, "
        "stderr and exit code. Pipelines and && work. Requires the user's approval."
    ),
    parameters=PARAMETERS,
    approval=ApprovalSettings(required=True, scope="once", message="Run `{command}`?"),
    annotations={"destructiveHint": True, "openWorldHint": True},
    run=run_shell,
)

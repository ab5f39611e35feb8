"""The built-in tools as the model sees them: name, description, parameters, approval.

Every turn offers these definitions to the model, but only a tool call runs one, so the
implementations (``shell``, ``files``: the process guard, the environment scrubbing, the
confinement checks) are imported at a call's first use, not by a process whose turns call
no tool.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from agentworld.shell import SHELL_TOOL as SHELL_TOOL_NAME
from agentworld.tools.builtin import DEFAULT_TIMEOUT, MAX_FILE_BYTES, MAX_TIMEOUT
from agentworld.tools.registry import ApprovalSettings, FilePreview, Tool, ToolContext

SHELL_PARAMETERS: dict[str, Any] = {
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

_PATH_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "A path relative to the working directory."}
    },
    "required": ["path"],
    "additionalProperties": False,
}


async def _run_shell(args: dict[str, Any], context: ToolContext) -> dict[str, Any]:
    from agentworld.tools.builtin.shell import run_shell  # on first use (module docstring)

    return await run_shell(args, context)


def _shell_precheck(args: dict[str, Any], context: ToolContext) -> str | None:
    """Why a shell call cannot run here whatever a person would answer: a directory outside
    the working directory, or a world that wants a sandbox (``on``) where none can be made."""
    from agentworld.tools.builtin.shell import check_directory  # on first use

    problem = check_directory(args.get("directory"), context.working_dir)
    if problem is None and context.sandbox == "on":
        contained = context.containment()
        if contained.refuses:
            return f"the world's sandbox setting is \"on\" and {contained.problem}; nothing ran"
    return problem


def question_problem(args: dict[str, Any], context: ToolContext) -> str | None:
    """Why an ``ask_user`` call cannot be asked (SPEC F3): nobody can answer now, an empty
    question, empty or repeated options, or no answer possible (no options, no free text)."""
    if not context.interactive:
        return (
            "nobody can answer questions now (this run is not interactive); decide without "
            "asking, or say in your reply what you need to know"
        )
    if not str(args.get("question", "")).strip():
        return "the question is empty"
    options = list(args.get("options") or [])
    if any(not option.strip() for option in options):
        return "an option is empty"
    if len(set(options)) != len(options):
        return "the options must all be different"
    if args.get("allowFreeText") is False and not options:
        return "allowFreeText is false and there are no options: nothing could answer it"
    return None


async def _read_file(args: dict[str, Any], context: ToolContext) -> dict[str, Any]:
    from agentworld.tools.builtin.files import read_file  # on first use

    return await read_file(args, context)


async def _list_files(args: dict[str, Any], context: ToolContext) -> dict[str, Any]:
    from agentworld.tools.builtin.files import list_files  # on first use

    return await list_files(args, context)


def _file_precheck(tool: str, args: dict[str, Any], context: ToolContext) -> str | None:
    from agentworld.tools.builtin import file_writes  # on first use

    return file_writes.precheck(args, context, tool=tool)


def _file_preview(tool: str, args: dict[str, Any], context: ToolContext) -> FilePreview:
    from agentworld.tools.builtin import file_writes  # on first use

    return file_writes.preview(args, context, tool=tool)


async def _write(tool: str, args: dict[str, Any], context: ToolContext) -> dict[str, Any]:
    from agentworld.tools.builtin import file_writes  # on first use

    return await file_writes.run(args, context, tool=tool)


_FILE_PATH = {"type": "string", "description": "The file, relative to the working directory."}
_SIZE_NOTE = f"Text files only (UTF-8), up to {MAX_FILE_BYTES // 1024} KiB."


SHELL_TOOL = Tool(
    name=SHELL_TOOL_NAME,
    description=(
        "Run a shell command line in the world's working directory and return its stdout, "
        "stderr and exit code. Pipelines and && work. Requires the user's approval."
    ),
    parameters=SHELL_PARAMETERS,
    approval=ApprovalSettings(required=True, scope="once", message="Run `{command}`?"),
    annotations={"destructiveHint": True, "openWorldHint": True},
    precheck=_shell_precheck,
    run=_run_shell,
)
READ_FILE_TOOL = Tool(
    name="read_file",
    description="Read a text file inside the world's working directory.",
    parameters=_PATH_PARAMETERS,
    annotations={"readOnlyHint": True},
    run=_read_file,
)
LIST_FILES_TOOL = Tool(
    name="list_files",
    description="List the entries of a directory inside the world's working directory.",
    parameters={
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "A directory relative to the working directory (default '.')."}
        },
        "additionalProperties": False,
    },
    annotations={"readOnlyHint": True},
    run=_list_files,
)
WRITE_FILE_TOOL = Tool(
    name="write_file",
    description=(
        "Write a whole text file inside the world's working directory, creating it (and its "
        f"directories) or replacing its content. {_SIZE_NOTE} Requires the user's approval, "
        "who sees the change as a diff. To change part of a file, use edit_file."
    ),
    parameters={
        "type": "object",
        "properties": {
            "path": _FILE_PATH,
            "content": {"type": "string", "description": "The file's whole new content."},
        },
        "required": ["path", "content"],
        "additionalProperties": False,
    },
    approval=ApprovalSettings(required=True, scope="once", message="Write {path}?"),
    annotations={"destructiveHint": True},
    precheck=partial(_file_precheck, "write_file"),
    preview=partial(_file_preview, "write_file"),
    run=partial(_write, "write_file"),
)
EDIT_FILE_TOOL = Tool(
    name="edit_file",
    description=(
        "Replace a piece of text in a file inside the world's working directory. `old` must "
        "be the file's exact text and occur exactly once (include surrounding lines to make it "
        f"unique), unless replaceAll is true. {_SIZE_NOTE} Requires the user's approval, who "
        "sees the change as a diff."
    ),
    parameters={
        "type": "object",
        "properties": {
            "path": _FILE_PATH,
            "old": {"type": "string", "description": "The exact text to replace (not empty)."},
            "new": {"type": "string", "description": "The text to put in its place."},
            "replaceAll": {
                "type": "boolean",
                "description": "Replace every occurrence of old (default false: it must occur once).",
            },
        },
        "required": ["path", "old", "new"],
        "additionalProperties": False,
    },
    approval=ApprovalSettings(required=True, scope="once", message="Edit {path}?"),
    annotations={"destructiveHint": True},
    precheck=partial(_file_precheck, "edit_file"),
    preview=partial(_file_preview, "edit_file"),
    run=partial(_write, "edit_file"),
)
ASK_USER_TOOL = Tool(
    name="ask_user",
    description=(
        "Ask the user a question and wait for the answer, which is this call's result "
        '({"answer": "..."}). Use it when you cannot go on well without a decision or a fact '
        "only the user has (which environment, which of two readings of the request, a missing "
        "value); do not use it for what you can find out yourself or for small choices you can "
        "make and mention. Give `options` when the answer is one of a few choices; set "
        "`allowFreeText` to false when it must be one of them."
    ),
    parameters={
        "type": "object",
        "properties": {
            "question": {"type": "string", "description": "The question, as the user will read it."},
            "options": {
                "type": "array",
                "items": {"type": "string"},
                "description": "Answers to choose from, each different (optional).",
            },
            "allowFreeText": {
                "type": "boolean",
                "description": "Whether an answer outside the options is taken (default true).",
            },
        },
        "required": ["question"],
        "additionalProperties": False,
    },
    precheck=question_problem,
    asks_person=True,
    uncontained="a question to a person: nothing runs",
)
BUILTIN_TOOLS: tuple[Tool, ...] = (
    SHELL_TOOL, READ_FILE_TOOL, LIST_FILES_TOOL, WRITE_FILE_TOOL, EDIT_FILE_TOOL, ASK_USER_TOOL
)

"""Asking one approval request, or one agent's question, at the prompt of ``agentworld talk``.

An approval request is shown whole — the call, where it runs, for a file tool the diff of the
change (SPEC F1: what is approved is the change) — then its question (``talk_question``). ``e``
edits the call first (SPEC F2, ``talk_edit``): a shell command line in place, other arguments
in the person's editor or in place as JSON; the edited call is shown, and a second question asks
with which scope it runs, or goes back. An agent's question (SPEC F3, ``talk_answer``) is shown
with its numbered options and answered by a line typed once it armed. Each returns what the
person decided (``Outcome``); the desk (``talk_desk``) acts on it.
"""

from __future__ import annotations

import difflib
import json
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rich.markup import escape

from agentworld.cli import output
from agentworld.cli.diff_view import print_diff
from agentworld.cli.talk_answer import AskedQuestion, Picked
from agentworld.cli.talk_inputs import edit_in_editor
from agentworld.cli.talk_prompt import Answer, written_out
from agentworld.cli.talk_question import CHOICES, SCOPE_CHOICES

if TYPE_CHECKING:
    from agentworld.cli.talk_edit import EditPlan
    from agentworld.cli.talk_session import TalkSession
    from agentworld.models.pending import PendingApproval, PendingQuestion


@dataclass(frozen=True, slots=True)
class Decided:
    """Deny, or approve with a scope; ``arguments``: the call as the person edited it."""

    answer: Answer
    arguments: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class Reply:
    """The answer to an agent's question."""

    text: str


@dataclass(frozen=True, slots=True)
class Later:
    """Left waiting (``l``, Ctrl-C, Ctrl-D): not asked again on its own."""


Outcome = Decided | Reply | Later

LEFT_WAITING = {
    "approval": "left pending: /approvals lists it; /approve or /deny answers it",
    "question": "left waiting: /questions lists it; /answer ID TEXT answers it",
}


async def ask_approval(session: TalkSession, request: PendingApproval) -> Outcome:
    """Show ``request`` and ask it until the person decides or leaves it waiting."""
    # Imported here, not on the way to the first prompt (it reads shell lines, finds secrets).
    from agentworld.cli.talk_edit import CannotEdit, EditPlan, edit_plan

    output.print_approvals([request], answers="none")  # with a file tool's diff, whole
    plan = edit_plan(request.tool_name, request.arguments, request.tool_args)
    choices = CHOICES
    if isinstance(plan, CannotEdit):
        choices = tuple(choice for choice in CHOICES if choice != "edit")
        session.screen.note(f"  (not offered for editing: {plan.reason})")
    while True:
        answer = await session.prompts.approval(always_means=always_means(request), choices=choices)
        if answer is None:
            return Later()
        if answer != "edit":
            return Decided(answer)
        assert isinstance(plan, EditPlan)
        edited = await _edit(session, request, plan)
        if edited is not None:
            return edited


async def _edit(session: TalkSession, request: PendingApproval, plan: EditPlan) -> Decided | None:
    """The call edited and its scope chosen; None to ask the first question again (the edit
    was cancelled, or is no call)."""
    from agentworld.cli.talk_edit import NotACall, arguments_json, edited_call

    text = await _edited_text(session, plan)
    if text is None:
        session.screen.note("edit cancelled: the request is asked again")
        return None
    found = edited_call(plan, text)
    if isinstance(found, NotACall):
        session.screen.error(f"{found.reason}; the request is asked again")
        return None
    arguments, title = found.arguments, "run the edited call:"
    if arguments is None:
        session.screen.note("nothing changed: the call runs as it is")
        title = "run it as it is:"
    elif plan.form == "line":
        session.screen.line(f"  edited command line: [bold]{output.shown_text(arguments['command'])}[/bold]")
    else:
        session.screen.line("  edited arguments:")
        changes = difflib.unified_diff(plan.text.splitlines(keepends=True),
                                       arguments_json(arguments).splitlines(keepends=True),
                                       "arguments", "edited", n=2)  # fmt: skip
        print_diff(session.screen.console, "".join(changes), indent="    ")
    edited = request if arguments is None else request.model_copy(update={"arguments": json.dumps(arguments)})
    scope = await session.prompts.approval(always_means=always_means(edited), choices=SCOPE_CHOICES, title=title)
    if scope is None or scope == "deny" or scope == "edit":
        session.screen.note("not approved: the request is asked again")
        return None
    return Decided(scope, arguments)


async def _edited_text(session: TalkSession, plan: EditPlan) -> str | None:
    from agentworld.cli.talk_edit import editor_command

    if plan.form == "line":
        return await session.prompts.edit(plan.text, label="command")
    editor = editor_command(os.environ)
    if editor is None:
        session.screen.note("edit the arguments (JSON); Enter accepts, Esc-Enter starts a new line, "
                            "Ctrl-C cancels")  # fmt: skip
        return await session.prompts.edit(plan.text, label="arguments")
    session.screen.note(f"editing the arguments in {editor[0]} (save and quit to go on)")
    await written_out()
    session.screen.prompting = False  # the editor has the terminal: nothing prints over it
    try:
        text = await edit_in_editor(editor, plan.text)
    finally:
        session.screen.prompting = True
    if text is None:
        session.screen.error(f"the editor ({' '.join(editor)}) failed or was quit without saving")
    return text


async def ask_question(session: TalkSession, request: PendingQuestion) -> Outcome:
    """Show an agent's question with its numbered options; the answer typed once it armed."""
    asked = AskedQuestion(agent=request.agent, question=request.question, options=tuple(request.options),
                          allow_free_text=request.allow_free_text)  # fmt: skip
    first, *more = asked.lines()
    session.screen.line(f"[bold magenta]{escape(first)}[/bold magenta]")
    for line in more:
        session.screen.line(escape(line))
    session.screen.line(f"[dim]  question id:  {escape(request.tool_call_id)}[/dim]")
    typed = await session.prompts.answer(asked)
    if typed is None:
        return Later()
    found = asked.resolve(typed)
    assert isinstance(found, Picked), "the prompt takes only an answer its question allows"
    return Reply(found.answer)


def always_means(request: PendingApproval) -> str:
    """What an ALWAYS answer to ``request`` would allow, in words (the grant's rule: the same
    commands or paths with any arguments, for every agent and chat of the world)."""
    import json

    from agentworld.approval.grants import (
        FILE_TOOLS,
        SHELL_TOOL,
        file_path,
        shell_shape,
        written_targets,
    )
    from agentworld.approval.shell_view import escape_controls

    tool = escape_controls(request.tool_name)
    everyone = "by any agent in any chat"
    try:
        arguments = json.loads(request.arguments)
    except ValueError:
        arguments = None
    if not isinstance(arguments, dict):
        return f"this {tool} call only (it cannot be remembered)"
    if request.tool_name == SHELL_TOOL:
        shape = shell_shape(arguments)
        if shape is None or not shape.roots:
            return "this command line only (it cannot be remembered as a rule)"
        names = ", ".join(f"`{escape_controls(root)}`" for root in sorted(shape.roots))
        writes = ""
        if shape.redirects:
            targets = written_targets(arguments)
            named = ", ".join(f"`{escape_controls(t)}`" for t in sorted(set(targets or ())))
            writes = f", writing only to {named}" if named else ", writing no file"
        return f"every {names} command (any arguments{writes}) {everyone}"
    if request.tool_name in FILE_TOOLS:
        path = file_path(request.tool_name, arguments)
        if path is None:
            return f"this {tool} call only (it cannot be remembered)"
        return f"{tool} of `{escape_controls(path)}` {everyone}"
    return f"every {tool} call, whatever its arguments, {everyone}"

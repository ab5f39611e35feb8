"""Approval commands: `approvals` (list, grants, revoke), `approve`, and `audit` (SPEC A2–A9)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer

from agentworld.cli import output
from agentworld.cli.chats import report_run, still_running
from agentworld.cli.common import (
    JsonOpt,
    WorldArg,
    check_chat,
    parse_json_option,
    parse_seconds,
    run,
    warn_if_uncontained,
)
from agentworld.documents import audit_doc, grant_doc

if TYPE_CHECKING:
    from agentworld.agent_world import AgentWorld
    from agentworld.approval.grants import Grant
    from agentworld.models.pending import PendingApproval
    from agentworld.models.records import AuditEntry




def approvals(
    world: WorldArg,
    chat: Annotated[str | None, typer.Option("--chat", help="Only this chat.")] = None,
    grants: Annotated[bool, typer.Option("--grants", help="List remembered session/always approvals instead.")] = False,
    revoke: Annotated[str | None, typer.Option("--revoke", help="Revoke the grant with this id.")] = None,
    json_out: JsonOpt = False,
) -> None:
    """List pending approval requests (or the grants; or revoke one)."""
    if revoke is not None:
        run(lambda aw: aw.revoke_grant(world, revoke))
        if json_out:
            output.print_json({"revoked": revoke})
        else:
            typer.echo(f"revoked {revoke}")
        return
    if grants:

        async def remembered(aw: AgentWorld) -> list[Grant]:
            await check_chat(aw, world, chat)
            every = await aw.grants(world)
            # With --chat: the grants that apply there (its session grants, the always ones).
            return [g for g in every if chat is None or g.chat_id in (None, chat)]

        docs = [grant_doc(g) for g in run(remembered)]
        if json_out:
            output.print_json({"grants": docs})
            return
        output.print_table(
            f"Approval grants in {world}",
            ["grant id", "scope", "tool", "agent", "chat", "commands", "may write"],
            [
                (d["grantId"], d["scope"], d["toolName"], d["agent"], d["chatId"], d["rootCommands"], d["redirectTargets"])
                for d in docs
            ],
            empty=f"no approval grants in world {world!r}",
        )
        return

    async def load(aw: AgentWorld) -> list[PendingApproval]:
        await check_chat(aw, world, chat)
        return await aw.approvals(world, chat_id=chat)

    pending = run(load)
    docs = [output.approval_doc(p) for p in pending]
    if json_out:
        output.print_json({"approvals": docs})
        return
    output.print_approvals(pending, empty="no pending approvals")


def approve(
    world: WorldArg,
    approval_id: Annotated[
        str, typer.Argument(metavar="APPROVAL_ID", help="The request's id, as `approvals` shows it.")
    ],
    decision: Annotated[str, typer.Option("--decision", help="approve | deny")],
    scope: Annotated[str, typer.Option("--scope", help="once | session | always")] = "once",
    args: Annotated[
        str | None,
        typer.Option(
            "--args",
            metavar="JSON",
            help="Approve the call with these arguments instead (a JSON object; - reads stdin).",
        ),
    ] = None,
    timeout: Annotated[
        float | None,
        typer.Option("--timeout", parser=parse_seconds, help="Seconds to wait for the world to go idle."),
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """Answer an approval request; the world runs until idle; prints the messages produced.
    With --args the call runs as corrected, once the tool and the policy accept it."""
    if decision not in ("approve", "deny"):
        output.fail("--decision must be approve or deny", code=2)
    if scope not in ("once", "session", "always"):
        output.fail("--scope must be once, session or always", code=2)
    if decision == "deny" and scope != "once":
        output.fail(f"--scope {scope} remembers an approval; a denial is for this call only", code=2)
    if decision == "deny" and args is not None:
        output.fail("--args corrects a call to approve; a denied call does not run", code=2)
    arguments = _edited_arguments(args) if args is not None else None
    chosen: Literal["approve", "deny"] = "approve" if decision == "approve" else "deny"
    chosen_scope: Literal["once", "session", "always"] = scope  # type: ignore[assignment]

    async def go(aw: AgentWorld) -> Any:
        await warn_if_uncontained(aw, world)
        return await aw.approve(
            world, approval_id, decision=chosen, scope=chosen_scope, arguments=arguments, timeout=timeout
        )

    result = run(go)
    if result.timed_out:
        result.errors.append(still_running(world, timeout, result.running))
    report_run(result, json_out)


def _edited_arguments(text: str) -> dict[str, Any]:
    """The arguments given with --args (standard input for ``-``): a JSON object, strictly."""
    if text == "-":
        if sys.stdin is None:  # started with ``<&-``
            output.fail("standard input is closed: there are no arguments to read for --args -", code=2)
        try:
            text = sys.stdin.buffer.read().decode("utf-8").removeprefix("\ufeff")
        except UnicodeDecodeError:
            output.fail("standard input is not UTF-8 text")
    arguments = parse_json_option(text, "--args")
    if not isinstance(arguments, dict):
        output.fail("--args must be a JSON object")
    return arguments


def audit(world: WorldArg, json_out: JsonOpt = False) -> None:
    """Every approval request and decision, and every message an on_event hook rewrote: who, when, what."""
    entries = run(lambda aw: aw.audit_log(world))
    if json_out:
        output.print_json({"audit": [audit_doc(e) for e in entries]})
        return
    output.print_table(
        f"Audit log of {world}",
        ["at", "event", "actor", "agent", "tool / message", "decision", "scope", "approval id"],
        [
            (output.when(e.at), e.event, e.actor, e.agent, _subject(e), e.decision, e.scope, e.approval_id)
            for e in entries
        ],
        empty=f"the audit log of world {world!r} is empty",
    )


def _subject(entry: AuditEntry) -> str | None:
    """What an entry is about: the tool of an approval, the message a hook rewrote, the
    message an edit or delete removed from (and how many went)."""
    detail = entry.detail or {}
    if entry.event == "rewrite":
        return f"message {detail.get('messageId')}"
    if entry.event in ("message_edited", "messages_deleted"):
        return f"message {detail.get('messageId')} ({detail.get('removed')} removed)"
    return entry.tool_name

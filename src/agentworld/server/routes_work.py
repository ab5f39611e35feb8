"""What happens in a world, over HTTP: approvals and their answers, client-side tool calls and
their results, policy, grants, the audit and tool logs, the tools offered, the world's status,
and resuming what stopped processes left."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import APIRouter, Response

from agentworld.agent_world import AgentWorld, SendResult
from agentworld.documents import (
    approval_doc,
    audit_doc,
    grant_doc,
    pending_call_doc,
    run_doc,
    tool_doc,
    tool_log_doc,
)
from agentworld.errors import InvalidInputError
from agentworld.models.pending import PendingApproval, PendingClientCall
from agentworld.server.deps import AW, ERRORS, ChatFilter, ChatId, Config, WorldName
from agentworld.server.errors import ApiError
from agentworld.server.json_body import OneValuePerKeyRoute
from agentworld.server.responses import JSONResponse
from agentworld.server.schemas import (
    ApprovalAnswer,
    ApprovalList,
    AuditList,
    ErrorDoc,
    GrantList,
    PendingCallList,
    PolicyTest,
    ResumeDoc,
    RuleList,
    RunDoc,
    StopDoc,
    ToolList,
    ToolLogList,
    ToolResultPost,
    Verdict,
    WorldStatus,
)
from agentworld.server.status import world_status

router = APIRouter(prefix="/api/worlds", responses=ERRORS, route_class=OneValuePerKeyRoute)
EDIT_REFUSALS: dict[int | str, dict[str, Any]] = {
    403: {
        "model": ErrorDoc,
        "description": "The corrected call (args) is denied by the policy in force: denied_by_policy",
    },
    422: {
        "model": ErrorDoc,
        "description": "The body does not match the schema, or the tool refuses args: invalid_input",
    },
}
"""What answering with ``args`` may be refused with, besides the router's (SPEC F2)."""


# -- approvals (SPEC A2–A10) -------------------------------------------------------------------


@router.get("/{world}/approvals", response_model=ApprovalList, tags=["approvals"])
async def list_approvals(world: WorldName, aw: AW, chat: ChatFilter = None) -> JSONResponse:
    """Approval requests waiting for a person, in every chat or one (overdue ones are denied
    first, SPEC A7)."""
    if chat is not None:
        await aw.get_chat(world, chat)
    pending = await aw.approvals(world, chat_id=chat)
    return JSONResponse({"approvals": [approval_doc(p) for p in pending]})


@router.post(
    "/{world}/approvals/{approval_id}", response_model=RunDoc, tags=["approvals"], responses=EDIT_REFUSALS
)
async def answer_approval(
    world: WorldName, approval_id: str, body: ApprovalAnswer, aw: AW, config: Config
) -> JSONResponse:
    """Answer a request (404 for an unknown id or one no agent of the world holds, 409 once it
    is answered); the world runs until the chat is idle (at most the server's wait), and the
    answer is what that produced. Every client sees the answer on the event stream.

    With ``args`` the call runs as the person corrected it (SPEC F2), once the tool accepts
    the arguments (else 422 ``invalid_input``) and the policy in force does not deny the call
    (else 403 ``denied_by_policy``); refused, nothing is answered and the request still waits."""

    async def answer() -> SendResult:
        return await aw.approve(
            world, approval_id, decision=body.decision, scope=body.scope, arguments=body.args,
            timeout=config.run_wait_seconds,
        )

    return JSONResponse(run_doc(await _answer_once(aw, world, approval_id, PendingApproval, answer)))


# -- client-side tools (SPEC T4) ---------------------------------------------------------------


@router.get("/{world}/pending-calls", response_model=PendingCallList, tags=["client tools"])
async def list_pending_calls(world: WorldName, aw: AW, chat: ChatFilter = None) -> JSONResponse:
    """Client-side tool calls waiting for their results."""
    return JSONResponse(
        {"pendingToolCalls": [pending_call_doc(c) for c in await aw.pending_calls(world, chat_id=chat)]}
    )


@router.post("/{world}/pending-calls/{tool_call_id}", response_model=RunDoc, tags=["client tools"])
async def post_tool_result(
    world: WorldName, tool_call_id: str, body: ToolResultPost, aw: AW, config: Config
) -> JSONResponse:
    """Post a client-side tool's result (409 once answered); the agent resumes."""

    async def respond() -> SendResult:
        return await aw.respond(
            world, tool_call_id, body.result, is_error=body.is_error,
            timeout=config.run_wait_seconds,
        )

    return JSONResponse(run_doc(await _answer_once(aw, world, tool_call_id, PendingClientCall, respond)))


async def _answer_once(
    aw: AgentWorld,
    world: str,
    call_id: str,
    kind: type[PendingApproval] | type[PendingClientCall],
    answer: Callable[[], Awaitable[SendResult]],
) -> SendResult:
    """404 for an id that is not a waiting call of that kind in the world, 409 for one that is
    answered (or cancelled) already — also when another client answered it a moment before."""
    what = "approval request" if kind is PendingApproval else "pending tool call"
    found = await aw.pending_call(world, call_id)  # an unknown world is a 404 too
    if not isinstance(found, kind):
        raise ApiError(404, "not_found", f"no {what} {call_id!r} in world {world!r}")
    if found.status != "pending":
        raise ApiError(409, "conflict", f"{what} {call_id!r} is already {found.status}")
    try:
        return await answer()
    except InvalidInputError:
        now = await aw.pending_call(world, call_id)
        if now is not None and now.status != "pending":
            raise ApiError(409, "conflict", f"{what} {call_id!r} is already {now.status}") from None
        raise


# -- policy, grants, logs ----------------------------------------------------------------------


@router.get("/{world}/policy/rules", response_model=RuleList, tags=["policy"])
async def policy_rules(world: WorldName, aw: AW) -> JSONResponse:
    """Every rule in force, highest priority first, with where it comes from (``policy list``)."""
    return JSONResponse({"rules": [r.describe() for r in await aw.policy_rules(world)]})


@router.post("/{world}/policy/test", response_model=Verdict, tags=["policy"])
async def policy_test(world: WorldName, body: PolicyTest, aw: AW) -> JSONResponse:
    """What the world's runtime would decide for this call, nothing run (``policy test``)."""
    if (body.agent is None) != (body.chat is None):
        raise InvalidInputError("agent and chat go together")
    verdict = await aw.check_tool_call(
        world, body.tool, body.args, server=body.server, mode=body.mode,
        interactive=not body.non_interactive, agent=body.agent, chat_id=body.chat,
    )
    return JSONResponse(verdict.to_json())


@router.get("/{world}/grants", response_model=GrantList, tags=["policy"])
async def list_grants(world: WorldName, aw: AW) -> JSONResponse:
    """Remembered session and always approvals in force."""
    return JSONResponse({"grants": [grant_doc(g) for g in await aw.grants(world)]})


@router.delete("/{world}/grants/{grant_id}", status_code=204, response_class=Response, tags=["policy"])
async def revoke_grant(world: WorldName, grant_id: str, aw: AW) -> None:
    """Revoke a grant (an "always" rule's id is ``always:GRANT_ID`` in the rules)."""
    await aw.get_world(world)
    await aw.revoke_grant(world, grant_id.removeprefix("always:"))


@router.get("/{world}/audit", response_model=AuditList, tags=["policy"])
async def audit(world: WorldName, aw: AW) -> JSONResponse:
    """Every approval request and decision (arguments with secrets redacted, SPEC A9)."""
    return JSONResponse({"audit": [audit_doc(e) for e in await aw.audit_log(world)]})


@router.get("/{world}/tool-logs", response_model=ToolLogList, tags=["tools"])
async def tool_logs(world: WorldName, aw: AW, chat: ChatFilter = None) -> JSONResponse:
    """Every tool execution: input (redacted), output, status, timing (SPEC E4)."""
    logs = await aw.tool_logs(world, chat_id=chat)
    return JSONResponse({"toolLogs": [tool_log_doc(e) for e in logs]})


@router.get("/{world}/tools", response_model=ToolList, tags=["tools"])
async def tools(world: WorldName, aw: AW) -> JSONResponse:
    """The tools the world's agents are offered (its MCP servers are started to list theirs)."""
    return JSONResponse({"tools": [tool_doc(t) for t in await aw.tools(world)]})


# -- running -----------------------------------------------------------------------------------


@router.get("/{world}/status", response_model=WorldStatus, tags=["worlds"])
async def status(world: WorldName, aw: AW) -> JSONResponse:
    """Which chats are running, queued (work no process runs yet), waiting (for people or
    clients) or idle — across every process on the database."""
    await aw.get_world(world)
    found = await world_status(aw, world)
    return JSONResponse(found.model_dump(mode="json", by_alias=True))


@router.post("/{world}/resume", response_model=ResumeDoc, tags=["worlds"])
async def resume(world: WorldName, aw: AW, config: Config) -> JSONResponse:
    """Finish what stopped processes left (``agentworld resume``); answers with what that
    produced within the server's wait (the rest goes on)."""
    result = await aw.resume(world, timeout=config.run_wait_seconds)
    return JSONResponse({"world": result.world, "chats": [run_doc(c) for c in result.chats]})


@router.post("/{world}/chats/{chat_id}/stop", response_model=StopDoc, tags=["chats"])
async def stop_chat(world: WorldName, chat_id: ChatId, aw: AW) -> JSONResponse:
    """Stop the chat's running work now (the UI's stop button, Ctrl-C in ``talk``): the turn is
    cancelled and its running tool killed, unfinished calls get "stopped" results, queued work
    is dropped, and the transcript says who stopped it. What was stored stays."""
    await aw.get_chat(world, chat_id)
    outcome = await aw.stop(world, chat_id, by="human")
    return JSONResponse(
        StopDoc(
            chat_id=chat_id,
            stopped=outcome.stopped,
            dropped=outcome.dropped,
            interrupted=list(outcome.interrupted),
            killed=list(outcome.killed),
            skipped=list(outcome.skipped),
        ).model_dump(mode="json", by_alias=True)
    )

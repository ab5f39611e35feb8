"""What waits for someone outside the loop, answered through a world's runtime: client
tool results, approvals (with corrected arguments), questions, and their time running out.

``WaitingCalls`` is a base of ``WorldRuntime``: each answer is checked here, then committed
and published by the runtime's ``apply`` like any step, so the chat's work goes on in its
inbox wherever it runs. The approval machinery is imported where it is first used (see
``runtime.world``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from agentworld.errors import InvalidArgumentsError, InvalidInputError, NotFoundError
from agentworld.models import World
from agentworld.models.pending import (
    PendingApproval,
    PendingCall,
    PendingClientCall,
    PendingQuestion,
)
from agentworld.models.work import StepResult
from agentworld.runtime.recovery import expire_chat_due, expire_overdue, recover_interrupted
from agentworld.runtime.trace_steps import wait_ended
from agentworld.runtime.turn_context import TurnContext
from agentworld.storage.pending import refuse_closed
from agentworld.storage.sql import SQLStorage

if TYPE_CHECKING:
    from agentworld.runtime.approvals import Decision, Scope


class WaitingCalls:
    """Answering the calls a chat's loop waits on (a base of ``WorldRuntime``)."""

    storage: SQLStorage
    world: str
    _turns: TurnContext

    async def apply(self, step: StepResult) -> StepResult:
        raise NotImplementedError  # WorldRuntime.apply: commit, then publish

    async def pending_calls(self, chat_id: str | None = None) -> list[PendingClientCall]:
        """Client-side tool calls waiting for their results (SPEC T4)."""
        return await self.storage.pending.find(self.world, chat_id=chat_id, kind="client")

    async def submit_tool_result(
        self, tool_call_id: str, result: Any, *, is_error: bool = False
    ) -> PendingCall:
        """Post the result of a client-side tool call; the agent's loop resumes once every
        waiting call of the same model response has its result.

        Refused (``NotFoundError`` / ``InvalidInputError``) for an id that is not a pending
        client call of this world, or that was already answered; nothing is stored then.
        """
        from agentworld.runtime.client_calls import submit_client_result  # (module docstring)

        answered, step = await submit_client_result(
            self._turns, self.world, tool_call_id, result, is_error=is_error
        )
        with wait_ended(answered, decision="error" if is_error else "result", by="client"):
            await self.apply(step)  # refused if it was answered meanwhile
        return answered

    async def approvals(self, chat_id: str | None = None) -> list[PendingApproval]:
        """Pending approval requests (after expiring overdue ones, SPEC A7)."""
        world = await self.storage.get_world(self.world)
        await recover_interrupted(self.storage, world)
        await expire_overdue(self.storage, world, self._expire)
        return await self.storage.pending.find(self.world, chat_id=chat_id, kind="approval")

    async def answer_approval(
        self,
        approval_id: str,
        *,
        decision: Decision,
        scope: Scope = "once",
        actor: str = "human",
        arguments: Mapping[str, Any] | None = None,
    ) -> PendingCall:
        """Answer an approval request of this world; refused for unknown, foreign, answered or
        expired ids (SPEC A3). The approved call runs, and the loop resumes, in the chat's inbox.

        ``arguments``: the call as the person corrected it (SPEC F2), checked before anything
        is stored (``approval_edits.checked_edit``): refused, the request still waits."""
        if arguments is not None and decision != "approve":
            raise InvalidArgumentsError("arguments go with an approval only: a denied call does not run")
        pending = await self.storage.pending.get(self.world, approval_id)
        if pending is not None:
            refuse_closed(pending)  # its agent was deleted: say so, rather than "not held"
        from agentworld.runtime.approvals import (  # (module docstring)
            answer_approval,
            answerable,
            remember_grant,
        )

        world = await self.storage.get_world(self.world)
        await recover_interrupted(self.storage, world)
        asked = await answerable(self._turns, world, approval_id)
        if asked.status == "pending" and asked.waited_longer_than(world.approval_timeout):
            await self._expire(world, asked)
            raise InvalidInputError(f"approval {approval_id!r} expired after {world.approval_timeout:g} s")
        edit = None
        if arguments is not None and asked.status == "pending":  # an answered one is refused below
            from agentworld.runtime.approval_edits import checked_edit

            edit = await checked_edit(self._turns, world, asked, arguments)
        step = answer_approval(asked, decision=decision, scope=scope, actor=actor, edit=edit)
        with wait_ended(asked, decision=decision, by=actor, scope=scope):
            await self.apply(step)  # refused if it was answered meanwhile
        assert step.answers is not None
        answered = asked.model_copy(update={"status": "answered", "answer": step.answers.answer})
        if decision == "approve" and scope in ("session", "always"):
            await remember_grant(self._turns, world, answered, scope)
        return answered

    async def questions(self, chat_id: str | None = None) -> list[PendingQuestion]:
        """Questions agents asked that wait for a person (overdue ones expired first)."""
        await expire_overdue(self.storage, await self.storage.get_world(self.world), self._expire)
        return await self.storage.pending.find(self.world, chat_id=chat_id, kind="question")

    async def answer_question(self, question_id: str, text: str, *, actor: str = "human") -> PendingQuestion:
        """Answer a question an agent asked (SPEC F3); refused for unknown, foreign, answered or
        expired ids, and for an answer the question does not take (``questions.answer_problem``).
        The answer is the ``ask_user`` call's result; the loop resumes in the chat's inbox."""
        from agentworld.runtime.questions import answer_question, answerable  # (module docstring)

        pending = await self.storage.pending.get(self.world, question_id)
        if pending is not None:
            refuse_closed(pending)  # its agent was deleted: say so, rather than "not held"
        world = await self.storage.get_world(self.world)
        asked = await answerable(self._turns, world, question_id)
        if asked.status == "pending" and asked.waited_longer_than(world.approval_timeout):
            await self._expire(world, asked)
            raise InvalidInputError(f"question {question_id!r} expired after {world.approval_timeout:g} s")
        step = answer_question(asked, text, actor=actor)
        with wait_ended(asked, decision="answer", by=actor):
            await self.apply(step)  # refused if it was answered meanwhile
        assert step.answers is not None
        return asked.model_copy(update={"status": "answered", "answer": step.answers.answer})

    async def expire_due(self, chat_id: str, world: World | None = None) -> float | None:
        """End the chat's overdue requests; seconds until its next one is due (None: none).
        ``world``: the world's settings as the caller just read them."""
        world = world or await self.storage.get_world(self.world)
        return await expire_chat_due(self.storage, world, chat_id, self._expire)

    async def _expire(self, world: World, pending: PendingCall) -> bool:
        """Deny a request whose time ran out (``ApprovalTimers``, and on access)."""
        from agentworld.runtime.approvals import expire  # (module docstring)

        step = expire(world, pending)
        if step is None:
            return False
        try:
            with wait_ended(pending, decision="deny", by="timeout", status="expired"):
                await self.apply(step)
        except (InvalidInputError, NotFoundError):
            return False  # answered (or expired) by someone else meanwhile, or removed by a cut
        return True

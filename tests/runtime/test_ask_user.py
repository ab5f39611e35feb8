"""An agent asks a person a question (``ask_user``, SPEC F3): the loop waits for the answer,
which is the call's result; options are enforced; nobody answering ends it in time."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from agentworld.agent_world import AgentWorld
from agentworld.documents import question_doc, run_doc
from agentworld.errors import InvalidInputError, NotFoundError
from agentworld.models.events import QuestionEvent, WorldEvent
from agentworld.models.work import InboxChange, Loop, StepResult
from agentworld.testing.openai_wire import OpenAIWireServer, Reply, ToolCallSpec

WHICH = {"question": "Which environment?", "options": ["staging", "production"], "allowFreeText": False}


def ask(arguments: dict[str, Any], call_id: str = "call_ask") -> ToolCallSpec:
    return ToolCallSpec(name="ask_user", arguments=json.dumps(arguments), id=call_id)


class Model:
    """Asks the planned question on a person's message; says what a tool result held."""

    def __init__(self) -> None:
        self.plans: list[list[ToolCallSpec]] = []

    def __call__(self, body: dict[str, Any]) -> Reply:
        last = body["messages"][-1]
        if last["role"] == "tool":
            return Reply.text("got: " + last["content"])
        return Reply.tools(*self.plans.pop(0)) if self.plans else Reply.text("nothing to ask")


@pytest.fixture
def model(script: Any) -> Model:
    planned = Model()
    script.by_agent["a1"] = planned
    return planned


def turns(server: OpenAIWireServer) -> list[dict[str, Any]]:
    return [r for r in server.requests if r["messages"][0]["content"] == "agent:a1"]


async def test_the_agent_waits_for_the_answer_and_reads_it_as_the_call_result(
    aw: AgentWorld, make_world: Any, model: Model, server: OpenAIWireServer
) -> None:
    await make_world("a1")
    model.plans.append([ask(WHICH)])
    events: list[WorldEvent] = []
    (await aw.runtime("w")).bus.subscribe(events.append, kinds=["question"])

    sent = await aw.send("w", "@a1 deploy it", timeout=30)

    (question,) = sent.pending_questions
    assert (question.tool_call_id, question.question, question.options, question.allow_free_text) == (
        "call_ask", "Which environment?", ["staging", "production"], False
    )
    assert run_doc(sent)["pendingQuestions"] == [question_doc(question)]
    assert await aw.questions("w") == [question]
    assert await aw.questions("w", chat_id=sent.chat_id) == [question]
    assert len(turns(server)) == 1  # the model is not asked again until the answer comes

    answered = await aw.answer("w", "call_ask", "staging", timeout=30)

    result = [m for m in answered.messages if m.tool_call_id == "call_ask"]
    assert [json.loads(m.content or "") for m in result] == [{"answer": "staging"}]
    assert answered.messages[-1].content == 'got: {"answer": "staging"}'
    assert turns(server)[-1]["messages"][-1] == {
        "role": "tool", "tool_call_id": "call_ask", "content": '{"answer": "staging"}'
    }
    assert answered.pending_questions == [] and await aw.questions("w") == []
    assert [(e.phase, e.question_id, e.detail) for e in events if isinstance(e, QuestionEvent)] == [
        ("requested", "call_ask", {"allowFreeText": False}),
        ("answered", "call_ask", {"answer": "staging", "actor": "human"}),
    ]
    stored = await aw.storage.list_events("w", kind="question")
    assert [e["phase"] for e in stored] == ["requested", "answered"]


async def test_an_answer_outside_the_options_is_refused_and_the_question_still_waits(
    aw: AgentWorld, make_world: Any, model: Model, server: OpenAIWireServer
) -> None:
    await make_world("a1")
    model.plans.append([ask(WHICH)])
    await aw.send("w", "@a1 deploy it", timeout=30)

    with pytest.raises(InvalidInputError, match='"qa" is not one of the options: "staging", "production"'):
        await aw.answer("w", "call_ask", "qa", timeout=30)
    with pytest.raises(InvalidInputError, match="empty"):
        await aw.answer("w", "call_ask", "  ", timeout=30)

    assert [q.tool_call_id for q in await aw.questions("w")] == ["call_ask"]
    assert len(turns(server)) == 1
    await aw.answer("w", "call_ask", "production", timeout=30)
    with pytest.raises(InvalidInputError, match="already answered"):
        await aw.answer("w", "call_ask", "staging", timeout=30)
    with pytest.raises(NotFoundError):
        await aw.answer("w", "call_nobody_made", "staging", timeout=30)


async def test_free_text_is_taken_when_allowed_and_a_question_is_no_approval(
    aw: AgentWorld, make_world: Any, model: Model
) -> None:
    await make_world("a1")
    model.plans.append([ask({"question": "Which branch?", "options": ["main"]})])
    sent = await aw.send("w", "@a1 merge", timeout=30)
    (question,) = sent.pending_questions
    assert sent.pending_approvals == [] and await aw.approvals("w") == []
    with pytest.raises(NotFoundError):
        await aw.approve("w", question.tool_call_id, decision="approve")

    answered = await aw.answer("w", question.tool_call_id, "  release/2.0\n", timeout=30)

    assert answered.messages[-1].content == 'got: {"answer": "release/2.0"}'


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ({"question": "  "}, "the question is empty"),
        ({"question": "Which?", "options": ["a", "a"]}, "the options must all be different"),
        ({"question": "Which?", "options": ["a", ""]}, "an option is empty"),
        ({"question": "Which?", "allowFreeText": False}, "nothing could answer it"),
        ({"question": "Which?", "options": "a"}, "options"),
    ],
)
async def test_a_question_nobody_could_answer_well_is_refused_to_the_model(
    aw: AgentWorld, make_world: Any, model: Model, arguments: dict[str, Any], problem: str
) -> None:
    await make_world("a1")
    model.plans.append([ask(arguments)])

    sent = await aw.send("w", "@a1 go", timeout=30)

    assert sent.pending_questions == [] and await aw.questions("w") == []
    (result,) = [m for m in sent.messages if m.tool_call_id == "call_ask"]
    assert problem in json.loads(result.content or "")["error"]


async def test_where_nobody_can_answer_the_model_is_told_so(
    db_url: str, make_world: Any, model: Model, server: OpenAIWireServer
) -> None:
    await make_world("a1", non_interactive=True)
    model.plans.append([ask(WHICH)])
    async with AgentWorld(db_url) as aw:
        sent = await aw.send("w", "@a1 deploy", timeout=30)

    assert sent.pending_questions == []
    (result,) = [m for m in sent.messages if m.tool_call_id == "call_ask"]
    assert "nobody can answer questions now" in json.loads(result.content or "")["error"]


async def test_an_unanswered_question_times_out_and_the_model_is_told(
    aw: AgentWorld, make_world: Any, model: Model
) -> None:
    await make_world("a1", approval_timeout=0.2)
    model.plans.append([ask(WHICH)])
    sent = await aw.send("w", "@a1 deploy", timeout=30)
    events: list[WorldEvent] = []
    (await aw.runtime("w")).bus.subscribe(events.append, kinds=["question"])

    await asyncio.sleep(0.4)
    await (await aw.runtime("w")).wait_until_idle()

    assert await aw.questions("w") == []
    transcript = await aw.storage.transcript("w", sent.chat_id)
    (ended,) = [m for m in transcript if m.tool_call_id == "call_ask"]
    assert "Nobody answered the question within 0.2 s" in json.loads(ended.content or "")["error"]
    assert transcript[-1].content is not None and transcript[-1].content.startswith("got: ")
    assert [(e.phase, e.detail) for e in events if isinstance(e, QuestionEvent)] == [
        ("answered", {"reason": "timeout", "actor": "timeout"})
    ]
    with pytest.raises(InvalidInputError, match="already expired"):
        await aw.answer("w", "call_ask", "staging", timeout=30)


async def test_a_question_overdue_while_no_process_ran_ends_when_the_next_one_starts(
    db_url: str, make_world: Any, model: Model, aw: AgentWorld, server: OpenAIWireServer
) -> None:
    await make_world("a1")
    model.plans.append([ask(WHICH)])
    sent = await aw.send("w", "@a1 deploy", timeout=30)
    await aw.update_world("w", approval_timeout=0.1)
    await aw.close()  # no process watches the question while its time runs out
    await asyncio.sleep(0.2)

    async with AgentWorld(db_url) as restarted:
        await restarted.runtime("w")  # starting finds the overdue question
        await (await restarted.runtime("w")).wait_until_idle(sent.chat_id)
        transcript = await restarted.storage.transcript("w", sent.chat_id)

    (ended,) = [m for m in transcript if m.tool_call_id == "call_ask"]
    assert "Nobody answered" in json.loads(ended.content or "")["error"]
    assert transcript[-1].content is not None and transcript[-1].content.startswith("got: ")


async def test_a_stop_leaves_the_question_waiting_and_deleting_the_agent_cancels_it(
    aw: AgentWorld, make_world: Any, model: Model
) -> None:
    await make_world("a1", "a2")
    model.plans.append([ask(WHICH)])
    sent = await aw.send("w", "@a1 deploy", timeout=30)

    await aw.stop("w", sent.chat_id)
    assert [q.tool_call_id for q in await aw.questions("w")] == ["call_ask"]

    await aw.delete_agent("w", "a1")
    assert await aw.questions("w") == []
    with pytest.raises(InvalidInputError, match="question 'call_ask' is no longer pending"):
        await aw.answer("w", "call_ask", "staging", timeout=30)


async def test_a_loop_left_in_the_inbox_while_its_question_waits_waits_too(
    aw: AgentWorld, make_world: Any, model: Model, server: OpenAIWireServer
) -> None:
    """A process stopped between the step that asked and the one that ended its loop item:
    whoever runs the chat next finds the loop, and must not ask the model with the question
    unanswered."""
    await make_world("a1")
    model.plans.append([ask(WHICH)])
    sent = await aw.send("w", "@a1 deploy", timeout=30)
    runtime = await aw.runtime("w")
    left = Loop(agent="a1", answer_to="human", reply_to=None)

    await runtime.apply(StepResult(sent.chat_id, inbox=InboxChange(sent.chat_id, append=(left,))))
    await runtime.wait_until_idle(sent.chat_id)

    assert len(turns(server)) == 1
    assert [q.tool_call_id for q in await aw.questions("w")] == ["call_ask"]
    answered = await aw.answer("w", "call_ask", "staging", timeout=30)
    assert answered.messages[-1].content == 'got: {"answer": "staging"}'
    assert len(turns(server)) == 2

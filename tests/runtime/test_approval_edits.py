"""A person corrects a call while approving it (SPEC F2), through the Python API: the corrected
call is checked by the tool and the policy in force before anything is stored, runs as
corrected in the real sandboxed working directory, the model reads a note and sees the call as it
ran, the audit log and the approval's event keep the original beside the edit, and a session or
always grant covers the corrected call only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentworld import AgentWorld, InvalidArgumentsError, PolicyDeniedError
from agentworld.models.pending import PendingApproval
from agentworld.runtime.approval_edits import as_meant
from agentworld.storage.event_log import EventLog
from agentworld.testing.openai_wire import OpenAIWireServer, Reply, ToolCallSpec

DENY_CURL = """
[[rule]]
toolName = "shell_cmd"
commandPrefix = "curl"
decision = "deny"
priority = 900
denyMessage = "no network fetches from agents"
name = "no-curl"
"""


ASK_BEFORE_READING = """
[[rule]]
toolName = "read_file"
decision = "ask_user"
priority = 500
"""


class Model:
    """Asks for the next planned call on each person's message (a shell command, or a tool's
    name and arguments); reports results back."""

    def __init__(self) -> None:
        self.commands: list[str | tuple[str, dict[str, Any]]] = []

    def __call__(self, body: dict[str, Any]) -> Reply:
        if body["messages"][-1]["role"] == "tool":
            return Reply.text("saw: " + body["messages"][-1]["content"])
        planned = self.commands.pop(0)
        name, arguments = ("shell_cmd", {"command": planned}) if isinstance(planned, str) else planned
        return Reply.tools(ToolCallSpec(name=name, arguments=json.dumps(arguments)))


@pytest.fixture
def model() -> Model:
    return Model()


@pytest.fixture
def llm(model: Model) -> Any:
    with OpenAIWireServer(responder=model) as server:
        yield server


@pytest.fixture
def work(tmp_path: Path) -> Path:
    directory = tmp_path / "work"
    directory.mkdir()
    (directory / "notes.txt").write_text("keep me\n")
    return directory


@pytest.fixture
async def world(aw: AgentWorld, llm: OpenAIWireServer, work: Path, tmp_path: Path) -> str:
    policy = tmp_path / "policy.toml"
    policy.write_text(DENY_CURL + ASK_BEFORE_READING)
    await aw.create_world("w", working_dir=str(work), policy_files=[str(policy)])
    await aw.create_agent("w", "a1", provider="openai", model="m", base_url=llm.base_url, api_key_env="NO_SUCH_KEY_VAR")
    return "w"


async def ask(aw: AgentWorld, model: Model, command: str | tuple[str, dict[str, Any]]) -> PendingApproval:
    model.commands.append(command)
    sent = await aw.send("w", "@a1 tidy up", timeout=30)
    (approval,) = sent.pending_approvals
    return approval


async def test_a_corrected_command_runs_as_corrected_the_model_is_told_and_the_audit_keeps_both(
    aw: AgentWorld, world: str, model: Model, llm: OpenAIWireServer, work: Path
) -> None:
    approval = await ask(aw, model, "rm -f notes.txt")

    done = await aw.approve(
        world, approval.tool_call_id, decision="approve", arguments={"command": "cp notes.txt notes.bak"}, timeout=30
    )

    assert (work / "notes.txt").read_text() == "keep me\n"  # the original never ran
    assert (work / "notes.bak").read_text() == "keep me\n"  # the correction did
    result = done.messages[-2].content or ""
    assert result.startswith("Note: a person changed this call's arguments before approving it;")
    assert '{"command": "cp notes.txt notes.bak"}' in result.splitlines()[0]
    assert '"exit_code": 0' in result

    # The model's next request: the call as it ran, then the note with the result.
    last = [r["messages"] for r in llm.requests if r["messages"][-1]["role"] == "tool"][-1]
    (call,) = last[-2]["tool_calls"]
    assert json.loads(call["function"]["arguments"]) == {"command": "cp notes.txt notes.bak"}
    assert last[-1]["role"] == "tool" and last[-1]["content"].startswith("Note: a person changed")
    assert "rm -f notes.txt" not in json.dumps(last)
    # Memory is append-only: the model's own message is kept as it wrote it.
    memory = await aw.storage.memory(world, "a1", approval.chat_id)
    assert any(c.function.arguments == '{"command": "rm -f notes.txt"}' for m in memory for c in m.tool_calls or ())

    (decision,) = [e for e in await aw.audit_log(world) if e.event == "decision"]
    assert decision.tool_args == {"command": "cp notes.txt notes.bak"}
    assert decision.detail is not None
    assert decision.detail["originalArgs"] == {"command": "rm -f notes.txt"}
    assert decision.detail["edited"] is True
    assert decision.detail["editedShell"]["commandLine"] == "cp notes.txt notes.bak"
    assert decision.detail["shell"]["commandLine"] == "rm -f notes.txt"  # what was shown
    (logged,) = await aw.tool_logs(world)
    assert logged.input == {"command": "cp notes.txt notes.bak"}
    events = (await EventLog(aw.storage).after(world, 0)).events
    (answered,) = [e.document for e in events if e.kind == "approval" and e.document["phase"] == "answered"]
    assert answered["detail"]["edited"] is True
    assert answered["detail"]["toolArgs"] == {"command": "cp notes.txt notes.bak"}
    stored = await aw.pending_call(world, approval.tool_call_id)
    assert isinstance(stored, PendingApproval)
    assert stored.arguments_to_run == '{"command": "cp notes.txt notes.bak"}'


async def test_an_edit_a_deny_rule_matches_is_refused_and_the_approval_still_waits(
    aw: AgentWorld, world: str, model: Model, work: Path
) -> None:
    approval = await ask(aw, model, "touch asked")

    with pytest.raises(PolicyDeniedError, match="no network fetches from agents"):
        await aw.approve(world, approval.tool_call_id, decision="approve", arguments={"command": "curl -o got http://x"})

    assert not (work / "got").exists()
    assert [a.tool_call_id for a in await aw.approvals(world)] == [approval.tool_call_id]
    request, refusal = await aw.audit_log(world)
    assert (request.event, refusal.event, refusal.decision) == ("request", "policy", "deny")
    assert (refusal.approval_id, refusal.tool_args) == (approval.tool_call_id, {"command": "curl -o got http://x"})
    assert refusal.detail is not None and refusal.detail["when"] == "answer"
    assert await aw.tool_logs(world) == []
    denied = await aw.approve(world, approval.tool_call_id, decision="deny", timeout=30)
    assert "User denied approval for shell_cmd" in (denied.messages[-2].content or "")
    assert await aw.approvals(world) == []


@pytest.mark.parametrize(
    ("arguments", "reason"),
    [
        ({"cmd": "ls"}, "do not fit the tool"),
        ({"command": 5}, "do not fit the tool"),
        ({"command": "ls", "directory": "../.."}, "cannot run"),
        ({"command": float("nan")}, "not JSON"),
        ({"command": "ls \ud800"}, "lone surrogate"),
    ],
)
async def test_arguments_the_tool_refuses_are_refused_before_anything_is_stored(
    aw: AgentWorld, world: str, model: Model, arguments: dict[str, Any], reason: str
) -> None:
    approval = await ask(aw, model, "touch asked")
    with pytest.raises(InvalidArgumentsError, match=reason):
        await aw.approve(world, approval.tool_call_id, decision="approve", arguments=arguments)
    assert [a.tool_call_id for a in await aw.approvals(world)] == [approval.tool_call_id]
    assert [e.event for e in await aw.audit_log(world)] == ["request"]


async def test_arguments_with_a_denial_are_refused(aw: AgentWorld, world: str, model: Model) -> None:
    approval = await ask(aw, model, "touch asked")
    with pytest.raises(InvalidArgumentsError, match="a denied call does not run"):
        await aw.approve(world, approval.tool_call_id, decision="deny", arguments={"command": "ls"})
    assert [a.tool_call_id for a in await aw.approvals(world)] == [approval.tool_call_id]


async def test_an_always_grant_covers_the_corrected_command_not_the_original(
    aw: AgentWorld, world: str, model: Model, work: Path
) -> None:
    approval = await ask(aw, model, "rm -f notes.txt")
    await aw.approve(
        world, approval.tool_call_id, decision="approve", scope="always",
        arguments={"command": "touch made"}, timeout=30,
    )
    assert (work / "made").exists() and (work / "notes.txt").exists()
    (grant,) = await aw.grants(world)
    assert (grant.scope, grant.roots) == ("always", frozenset({"touch"}))

    model.commands.append("touch again")
    unasked = await aw.send("w", "@a1 more", timeout=30)
    assert unasked.pending_approvals == [] and (work / "again").exists()
    asked = await ask(aw, model, "rm -f notes.txt")
    assert asked.tool_args == {"command": "rm -f notes.txt"}
    assert (work / "notes.txt").exists()


async def test_a_secret_in_a_correction_runs_but_is_masked_wherever_it_is_shown(
    aw: AgentWorld, world: str, model: Model, llm: OpenAIWireServer, work: Path
) -> None:
    key = "sk-proj-" + "a1B2c3D4e5F6g7H8i9J0" * 2
    approval = await ask(aw, model, "touch asked")

    done = await aw.approve(
        world, approval.tool_call_id, decision="approve", arguments={"command": f"echo {key} > key.txt"}, timeout=30
    )

    assert (work / "key.txt").read_text().strip() == key  # it ran with the real value
    seen = json.dumps([r["messages"] for r in llm.requests])
    assert key not in seen and "[REDACTED" in seen
    assert key not in json.dumps([m.model_dump(mode="json") for m in done.messages])
    (decision,) = [e for e in await aw.audit_log(world) if e.event == "decision"]
    assert key not in json.dumps(decision.tool_args) and key not in json.dumps(decision.detail)
    (logged,) = await aw.tool_logs(world)
    assert key not in json.dumps(logged.input)


async def test_a_corrected_file_tool_call_reads_the_file_the_person_named(
    aw: AgentWorld, world: str, model: Model, llm: OpenAIWireServer, work: Path
) -> None:
    (work / "other.txt").write_text("the right file\n")
    approval = await ask(aw, model, ("read_file", {"path": "notes.txt"}))

    done = await aw.approve(world, approval.tool_call_id, decision="approve", arguments={"path": "other.txt"}, timeout=30)

    result = done.messages[-2].content or ""
    assert result.startswith("Note: a person changed") and "the right file" in result and "keep me" not in result
    (decision,) = [e for e in await aw.audit_log(world) if e.event == "decision"]
    assert (decision.tool_args, decision.detail["originalArgs"]) == ({"path": "other.txt"}, {"path": "notes.txt"})
    assert "editedShell" not in decision.detail
    with pytest.raises(InvalidArgumentsError, match="do not fit the tool"):
        asked = await ask(aw, model, ("read_file", {"path": "notes.txt"}))
        await aw.approve(world, asked.tool_call_id, decision="approve", arguments={"path": "notes.txt", "mode": "rb"})


async def test_the_models_own_arguments_given_back_are_no_correction(
    aw: AgentWorld, world: str, model: Model, work: Path
) -> None:
    approval = await ask(aw, model, "touch asked")
    done = await aw.approve(world, approval.tool_call_id, decision="approve", arguments={"command": "touch asked"}, timeout=30)
    assert (work / "asked").exists()
    assert not (done.messages[-2].content or "").startswith("Note:")
    (decision,) = [e for e in await aw.audit_log(world) if e.event == "decision"]
    assert decision.detail is not None and "edited" not in decision.detail


def test_what_the_person_left_as_shown_runs_as_the_model_wrote_it() -> None:
    key = "sk-proj-" + "a1B2c3D4e5F6g7H8i9J0" * 2
    written = {"command": f"curl -H 'Authorization: Bearer {key}' https://a.example", "parameters": ["a\tb"]}
    shown = {"command": "curl -H 'Authorization: Bearer [REDACTED:api_key]' https://a.example",
             "parameters": ["a\\tb"]}

    # Untouched arguments are the model's, escapes and all; a kept mask is the value it hid.
    edited = {"command": "curl -H 'Authorization: Bearer [REDACTED:api_key]' https://b.example",
              "parameters": ["a\\tb"]}
    assert as_meant(edited, written, shown) == {
        "command": f"curl -H 'Authorization: Bearer {key}' https://b.example", "parameters": ["a\tb"],
    }
    assert as_meant(dict(shown), written, shown) == written
    # A mask that stands for nothing there is refused: its text would run.
    for refused in (
        {"command": "echo [REDACTED:api_key]"},
        {"command": "curl [REDACTED:api_key] [REDACTED:api_key]"},
        {"command": "echo [REDACTED:password]", "x": "[REDACTED:api_key]"},
    ):
        with pytest.raises(InvalidArgumentsError, match="masked value"):
            as_meant(refused, {"command": "echo hi"}, {"command": "echo hi"})


async def test_a_correction_that_keeps_a_masked_secret_runs_with_the_secret(
    aw: AgentWorld, world: str, model: Model, llm: OpenAIWireServer, work: Path
) -> None:
    key = "sk-proj-" + "a1B2c3D4e5F6g7H8i9J0" * 2
    approval = await ask(aw, model, f"echo {key} > key.txt")
    assert approval.tool_args == {"command": "echo [REDACTED:api_key] > key.txt"}

    await aw.approve(
        world, approval.tool_call_id, decision="approve", arguments={"command": "echo [REDACTED:api_key] > kept.txt"},
        timeout=30,
    )

    assert (work / "kept.txt").read_text().strip() == key and not (work / "key.txt").exists()
    (decision,) = [e for e in await aw.audit_log(world) if e.event == "decision"]
    assert decision.tool_args == {"command": "echo [REDACTED:api_key] > kept.txt"}


async def test_a_corrected_file_content_is_written_with_its_lines_and_the_approval_shows_them(
    aw: AgentWorld, world: str, model: Model, work: Path
) -> None:
    approval = await ask(aw, model, ("write_file", {"path": "plan.md", "content": "# Plan\n\tfirst\n"}))
    # A file's text is shown with its lines (the person edits lines, not escapes); its path
    # and every other value keep control characters escaped.
    assert approval.tool_args == {"path": "plan.md", "content": "# Plan\n\tfirst\n"}

    corrected = {"path": "plan.md", "content": "# Plan\n\tfirst\n\tsecond\n"}
    await aw.approve(world, approval.tool_call_id, decision="approve", arguments=corrected, timeout=30)

    assert (work / "plan.md").read_text() == "# Plan\n\tfirst\n\tsecond\n"


async def test_the_file_of_a_change_cannot_be_corrected_to_another_file(
    aw: AgentWorld, world: str, model: Model, work: Path
) -> None:
    approval = await ask(aw, model, ("edit_file", {"path": "notes.txt", "old": "keep", "new": "kept"}))
    assert approval.diff is not None and "-keep me" in approval.diff

    with pytest.raises(InvalidArgumentsError, match="the file of a change cannot be corrected"):
        await aw.approve(
            world, approval.tool_call_id, decision="approve",
            arguments={"path": "other.txt", "old": "keep", "new": "kept"},
        )  # fmt: skip

    assert not (work / "other.txt").exists()
    assert [p.tool_call_id for p in await aw.approvals(world)] == [approval.tool_call_id]

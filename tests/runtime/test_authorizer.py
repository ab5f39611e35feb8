"""The authorizer's pure parts: each tool's default rule, the tiers put together, and the one
decision function the runtime and `agentworld policy test` share."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentworld.approval.grants import Grant
from agentworld.policy.engine import PolicyEngine
from agentworld.policy.loader import PolicyLoadError
from agentworld.policy.rules import PolicyDecision
from agentworld.runtime.authorizer import (
    ADMIN_POLICY_ENV,
    CallVerdict,
    PolicyFiles,
    callable_tool,
    decide_call,
    load_rules,
    tool_default_rule,
)
from agentworld.tools.registry import ApprovalSettings, Tool, ToolRegistry

ALLOW, DENY, ASK = PolicyDecision.ALLOW, PolicyDecision.DENY, PolicyDecision.ASK_USER


@pytest.fixture(autouse=True)
def no_admin_files(monkeypatch: pytest.MonkeyPatch) -> None:
    """Admin files come from the environment: a developer's own must not change these tests."""
    monkeypatch.delenv(ADMIN_POLICY_ENV, raising=False)


def mcp_tool(name: str = "srv__t", *, trusted: bool = False, **hints: Any) -> Tool:
    return Tool(name=name, description="", annotations=hints, server="srv", trusted=trusted)


@pytest.mark.parametrize(
    ("tool", "expected"),
    [
        pytest.param(mcp_tool(), ASK, id="mcp-without-annotations-asks"),
        pytest.param(mcp_tool(readOnlyHint=True), ALLOW, id="mcp-read-only-allowed"),
        pytest.param(mcp_tool(readOnlyHint=False), ASK, id="mcp-read-only-false-asks"),
        pytest.param(mcp_tool(readOnlyHint="true"), ASK, id="mcp-read-only-not-a-boolean-asks"),
        pytest.param(mcp_tool(readOnlyHint=True, destructiveHint=True), ASK, id="mcp-read-only-but-destructive-asks"),
        pytest.param(mcp_tool(destructiveHint=False), ASK, id="mcp-not-destructive-still-asks"),
        pytest.param(mcp_tool(idempotentHint=True, title="T"), ASK, id="mcp-other-hints-ask"),
        pytest.param(mcp_tool(trusted=True), ALLOW, id="mcp-trusted-server-allowed"),
        pytest.param(mcp_tool(trusted=True, destructiveHint=True), ALLOW, id="mcp-trusted-even-destructive"),
        pytest.param(Tool(name="mine", description=""), ALLOW, id="builtin-without-approval"),
        pytest.param(Tool(name="mine", description="", approval=ApprovalSettings(required=True)), ASK, id="builtin-approval-required"),
        pytest.param(Tool(name="mine", description="", annotations={"destructiveHint": True}), ASK, id="builtin-destructive"),
        pytest.param(Tool(name="mine", description="", annotations={"readOnlyHint": True}), ALLOW, id="builtin-read-only"),
    ],
)  # fmt: skip
def test_tool_default_rule(tool: Tool, expected: PolicyDecision) -> None:
    rule = tool_default_rule(tool)
    assert (rule.decision, rule.priority, rule.tool_name) == (expected, 1.0, tool.name)
    assert rule.name is not None and rule.name.startswith(tool.name)


def test_any_policy_rule_outranks_an_mcp_default() -> None:
    engine = PolicyEngine([tool_default_rule(mcp_tool(trusted=True))], mode="default")
    assert engine.evaluate("srv__t", {}, "srv").decision is ALLOW
    loaded = load_rules(PolicyFiles(), tools=[mcp_tool()], builtin=[])
    assert PolicyEngine(loaded.rules, mode="yolo").evaluate("srv__t", {}, "srv").decision is ALLOW


def test_load_rules_puts_admin_files_last_at_tier_3(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user = tmp_path / "user.toml"
    user.write_text('[[rule]]\ntoolName = "read_file"\ndecision = "allow"\npriority = 999\n')
    admin = tmp_path / "admin.toml"
    admin.write_text('[[rule]]\ntoolName = "read_file"\ndecision = "deny"\npriority = 0\n')
    monkeypatch.setenv(ADMIN_POLICY_ENV, str(admin))
    loaded = load_rules(PolicyFiles(), user_files=[str(user)], excluded_tools=["list_files"])
    assert loaded.errors == []
    assert [(r.source, r.priority) for r in loaded.rules][-1] == (str(admin), 3.0)
    engine = PolicyEngine(loaded.rules)
    assert engine.evaluate("read_file", {"path": "x"}).decision is DENY
    assert engine.evaluate("list_files", {"path": "x"}).decision is DENY


def test_a_broken_admin_file_is_an_error_of_load_rules(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ADMIN_POLICY_ENV, str(tmp_path / "missing.toml"))
    loaded = load_rules(PolicyFiles())
    assert [e.type for e in loaded.errors] == ["file_read"]


# -- decide_call --------------------------------------------------------------------------


def engine(*tools: Tool) -> PolicyEngine:
    return PolicyEngine(load_rules(PolicyFiles(), tools=tools).rules)


def session(
    tool_name: str, *, agent: str = "a1", chat_id: str = "c1", roots: frozenset[str] | None = None
) -> Grant:
    return Grant("g1", "w", "session", tool_name, agent=agent, chat_id=chat_id, roots=roots)


def test_decide_call_takes_the_policys_answer() -> None:
    verdict = decide_call(engine(mcp_tool()), "srv__t", {"x": 1}, server="srv")
    assert (verdict.decision, verdict.by) == (ASK, "policy")
    assert verdict.rule is not None and verdict.rule.source == "tool settings"
    allowed = decide_call(engine(), "read_file", {"path": "x"})
    assert (allowed.decision, allowed.to_json()["rule"]["name"]) == (ALLOW, "read-only file tools")


def test_decide_call_denies_a_spoofed_server_with_the_runtime_message() -> None:
    verdict = decide_call(engine(mcp_tool()), "srv__t", {}, server="evil")
    assert (verdict.decision, verdict.by, verdict.rule) == (DENY, "policy", None)
    assert verdict.reason.startswith("srv__t is denied by policy (tool 'srv__t' does not belong")


def test_a_session_approval_covers_an_ask_only_for_its_agent_and_chat() -> None:
    grants = [session("srv__t")]
    covered = decide_call(engine(mcp_tool()), "srv__t", {}, grants=grants, agent="A1", chat_id="c1")
    assert (covered.decision, covered.by, covered.grant) == (ALLOW, "session approval", grants[0])
    assert covered.to_json()["grant"] == "g1"
    for agent, chat in (("a2", "c1"), ("a1", "c2")):
        other = decide_call(
            engine(mcp_tool()), "srv__t", {}, grants=grants, agent=agent, chat_id=chat
        )
        assert other.decision is ASK
    assert decide_call(engine(mcp_tool()), "srv__t", {}, grants=grants).decision is ASK


def test_a_session_approval_never_widens_a_shell_command() -> None:
    grants = [session("shell_cmd", roots=frozenset({"ls"}))]
    ok = decide_call(
        engine(), "shell_cmd", {"command": "ls -la"}, grants=grants, agent="a1", chat_id="c1"
    )
    assert ok.decision is ALLOW
    chained = decide_call(
        engine(),
        "shell_cmd",
        {"command": "ls && rm -rf ~"},
        grants=grants,
        agent="a1",
        chat_id="c1",
    )
    assert chained.decision is ASK


def test_a_session_approval_never_overrides_a_deny() -> None:
    grants = [session("srv__t")]
    denying = PolicyEngine(load_rules(PolicyFiles(), excluded_tools=["srv__t"]).rules)
    verdict = decide_call(denying, "srv__t", {}, grants=grants, agent="a1", chat_id="c1")
    assert (verdict.decision, verdict.by) == (DENY, "policy")


def test_nobody_to_ask_denies_after_session_approvals_are_checked() -> None:
    grants = [session("srv__t")]
    covered = decide_call(
        engine(mcp_tool()), "srv__t", {}, grants=grants, agent="a1", chat_id="c1", interactive=False
    )
    assert covered.decision is ALLOW
    denied = decide_call(engine(mcp_tool()), "srv__t", {}, interactive=False)
    assert (denied.decision, denied.by) == (DENY, "nobody to ask")
    assert "nobody can be asked" in denied.reason and denied.to_json()["by"] == "nobody to ask"


def test_a_load_error_denies_every_call() -> None:
    error = PolicyLoadError("toml_parse", "p.toml", None, "bad")
    verdict = decide_call(engine(), "read_file", {"path": "x"}, errors=[error])
    assert (verdict.decision, verdict.by, verdict.rule) == (DENY, "broken policy", None)
    assert "p.toml" in verdict.reason


def test_a_deny_message_is_what_the_model_reads(tmp_path: Path) -> None:
    path = tmp_path / "p.toml"
    path.write_text(
        '[[rule]]\ntoolName = "x"\ndecision = "deny"\npriority = 1\ndenyMessage = "Not here."\n'
    )
    verdict = decide_call(
        PolicyEngine(load_rules(PolicyFiles(), user_files=[str(path)]).rules), "x", {}
    )
    assert (verdict.decision, verdict.reason) == (DENY, "Not here.")


def test_an_unmatched_call_keeps_the_json_shape_of_policy_test() -> None:
    verdict = decide_call(PolicyEngine(load_rules(PolicyFiles(), builtin=[]).rules), "x", {})
    assert verdict.to_json() == {"decision": "ASK_USER", "rule": None, "reason": "no rule matched"}


def test_callable_tool_refuses_as_the_runtime_does() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    registry = ToolRegistry([Tool(name="count", description="", parameters=schema)])
    assert isinstance(callable_tool(registry, "count", {"n": 1}), Tool)
    for name, arguments, reason in [
        ("nope", {}, "unknown tool 'nope'"),
        ("client.requestApproval", {}, "reserved for the client"),
        ("count", {"n": "one"}, "count: "),
    ]:
        refused = callable_tool(registry, name, arguments)
        assert isinstance(refused, CallVerdict)
        assert (refused.decision, refused.by) == (DENY, "not callable") and reason in refused.reason

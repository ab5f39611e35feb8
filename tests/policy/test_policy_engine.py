"""The policy engine decides each tool call (SPEC §2.7 P1, P2, P4, P5, P8, P9), table by table."""

from __future__ import annotations

from typing import Any

import pytest

from agentworld.policy.engine import PolicyEngine
from agentworld.policy.loader import load_policy_text
from agentworld.policy.rules import PolicyDecision, PolicyRule, Tier

ALLOW = PolicyDecision.ALLOW
DENY = PolicyDecision.DENY
ASK = PolicyDecision.ASK_USER
SHELL = "shell_cmd"


def rules(text: str, *, source: str = "policy.toml", tier: int = Tier.USER) -> list[PolicyRule]:
    loaded = load_policy_text(text, source=source, tier=tier)
    assert loaded.errors == []
    return loaded.rules


def engine(text: str, **options: Any) -> PolicyEngine:
    return PolicyEngine(rules(text), **options)


def rule(decision: str, priority: int = 100, **fields: Any) -> str:
    """One ``[[rule]]`` table; list and string values are written as TOML."""
    lines = ["[[rule]]", f'decision = "{decision}"', f"priority = {priority}"]
    for key, value in fields.items():
        if isinstance(value, bool):
            lines.append(f"{key} = {str(value).lower()}")
        elif isinstance(value, list):
            lines.append(f"{key} = [{', '.join(_literal(v) for v in value)}]")
        else:
            lines.append(f"{key} = {_literal(value)}")
    return "\n".join(lines) + "\n"


def _literal(value: str) -> str:
    # TOML literal strings keep backslashes, which regexes need; none of ours contains a `'`.
    assert "'" not in value
    return f"'{value}'"


def shell(command: str, *, parameters: list[str] | None = None) -> dict[str, Any]:
    return (
        {"command": command}
        if parameters is None
        else {"command": command, "parameters": parameters}
    )


# A policy allowing `git log`, `echo` and `touch` and denying `rm`.
ACCEPTANCE = rule("allow", toolName=SHELL, commandPrefix=["git log", "echo", "touch"]) + rule(
    "deny", toolName=SHELL, commandPrefix="rm"
)


# --- which rule matches which tool ----------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "tool", "expected"),
    [
        pytest.param(rule("deny"), "anything", DENY, id="wildcard-matches-every-tool"),
        pytest.param(rule("deny"), "srv__tool", DENY, id="wildcard-matches-mcp-tools"),
        pytest.param(rule("allow", toolName="read_file"), "read_file", ALLOW, id="named-matches"),
        pytest.param(rule("allow", toolName="read_file"), "read_files", ASK, id="named-is-exact"),
        pytest.param(rule("allow", toolName="read_file"), "write_file", ASK, id="named-others-default"),
        pytest.param(rule("deny", toolName="files__*"), "files__read", DENY, id="server-star-own-tool"),
        pytest.param(rule("deny", toolName="files__*"), "other__read", ASK, id="server-star-other-server"),
        pytest.param(rule("deny", toolName="files__*"), "filesx__read", ASK, id="server-star-longer-name"),
        pytest.param(rule("deny", toolName="files__*"), "files_read", ASK, id="server-star-one-underscore"),
        pytest.param(rule("deny", toolName="files__*"), "read", ASK, id="server-star-builtin"),
        pytest.param(rule("deny", mcpName="files"), "files__write", DENY, id="mcp-name-alone-own-tool"),
        pytest.param(rule("deny", mcpName="files"), "other__write", ASK, id="mcp-name-alone-other"),
        pytest.param(rule("allow", mcpName="files", toolName="read"), "files__read", ALLOW, id="mcp-and-tool"),
        pytest.param(rule("allow", mcpName="files", toolName="read"), "files__write", ASK, id="mcp-and-tool-other-tool"),
        pytest.param(rule("allow", mcpName="files", toolName="read"), "read", ASK, id="mcp-and-tool-unprefixed"),
        pytest.param(rule("allow", mcpName="files", toolName="read"), "other__read", ASK, id="mcp-and-tool-other-server"),
    ],
)  # fmt: skip
def test_rule_matches_tool_names(policy: str, tool: str, expected: PolicyDecision) -> None:
    assert engine(policy).evaluate(tool, {"x": 1}).decision is expected


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        pytest.param(rule("allow", 10) + rule("deny", 20), DENY, id="higher-loaded-last-wins"),
        pytest.param(rule("deny", 20) + rule("allow", 10), DENY, id="higher-loaded-first-wins"),
        pytest.param(rule("deny", 10) + rule("allow", 20), ALLOW, id="higher-allow-loaded-last-wins"),
        pytest.param(rule("allow", 20) + rule("deny", 10), ALLOW, id="higher-allow-loaded-first-wins"),
        pytest.param(rule("allow", 5) + rule("deny", 5), ALLOW, id="tie-first-loaded-allow-wins"),
        pytest.param(rule("deny", 5) + rule("allow", 5), DENY, id="tie-first-loaded-deny-wins"),
        pytest.param(rule("ask_user", 999) + rule("allow", 998, toolName="t"), ASK, id="wildcard-above-named"),
        pytest.param(rule("deny", 1, toolName="t") + rule("allow", 2), ALLOW, id="named-below-wildcard"),
    ],
)  # fmt: skip
def test_priority_decides_regardless_of_load_order(policy: str, expected: PolicyDecision) -> None:
    assert engine(policy).evaluate("t", {}).decision is expected


def test_equal_priorities_across_files_keep_file_load_order() -> None:
    first = rules(rule("deny", 50), source="a.toml")
    second = rules(rule("allow", 50), source="b.toml")
    for order, winner in (([*first, *second], "a.toml"), ([*second, *first], "b.toml")):
        decided = PolicyEngine(order).evaluate("t", {}).rule
        assert decided is not None and decided.source == winner


def test_higher_tier_beats_any_priority_of_a_lower_tier() -> None:
    user = rules(rule("allow", 999), tier=Tier.USER)
    admin = rules(rule("deny", 0), tier=Tier.ADMIN)
    assert PolicyEngine([*user, *admin]).evaluate("t", {}).decision is DENY


def test_no_matching_rule_gives_the_default_decision_and_no_rule() -> None:
    result = PolicyEngine().evaluate("t", {})
    assert (result.decision, result.rule) == (ASK, None)
    assert PolicyEngine(default=ALLOW).evaluate("t", {}).decision is ALLOW


# --- argsPattern ----------------------------------------------------------------------

DEPLOY_PROD = rule("deny", toolName="deploy", argsPattern='"env":"prod"')


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        pytest.param({"env": "prod"}, DENY, id="only-key"),
        pytest.param({"a": 1, "env": "prod", "z": 2}, DENY, id="middle-key"),
        pytest.param({"z": 2, "env": "prod", "a": 1}, DENY, id="keys-reversed"),
        pytest.param({"target": {"env": "prod"}}, DENY, id="nested-once"),
        pytest.param({"t": {"u": {"v": {"w": 1, "env": "prod"}}}}, DENY, id="nested-deep"),
        pytest.param({"targets": [{"x": 1}, {"env": "prod"}]}, DENY, id="nested-in-list"),
        pytest.param({"env": "dev"}, ASK, id="other-value"),
        pytest.param({"env": "production"}, ASK, id="pattern-includes-closing-quote"),
            pytest.param({"note": 'say "env":"prod"'}, ASK, id="quotes-in-a-string-are-escaped"),
        pytest.param({"environment": "prod"}, ASK, id="other-key"),
        pytest.param({}, ASK, id="empty-args"),
        pytest.param(None, ASK, id="no-args"),
    ],
)  # fmt: skip
def test_args_pattern_ignores_key_order_and_depth(
    arguments: dict[str, Any] | None, expected: PolicyDecision
) -> None:
    assert engine(DEPLOY_PROD).evaluate("deploy", arguments).decision is expected


@pytest.mark.parametrize("pattern", [".*", "", "^", "\\{"])
@pytest.mark.parametrize("arguments", [{}, None], ids=["empty", "none"])
def test_rule_with_args_pattern_never_matches_a_call_without_arguments(
    pattern: str, arguments: dict[str, Any] | None
) -> None:
    policy = engine(rule("deny", toolName="t", argsPattern=pattern))
    assert policy.evaluate("t", arguments).decision is ASK
    assert policy.evaluate("t", {"a": 1}).decision is DENY


ANCHORED_RM = rule("deny", toolName="run", argsPattern='\\x00"command":"rm ')


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        pytest.param({"command": "rm x"}, DENY, id="top-level-pair"),
        pytest.param({"a": 1, "command": "rm x", "z": [1]}, DENY, id="top-level-pair-among-others"),
        pytest.param({"note": {"command": "rm x"}}, ASK, id="nested-pair-cannot-impersonate"),
        pytest.param({"note": [{"command": "rm x"}]}, ASK, id="nested-in-list-cannot-impersonate"),
        pytest.param({"note": '\x00"command":"rm x'}, ASK, id="nul-inside-a-value-is-escaped"),
        pytest.param({"command": "echo rm x"}, ASK, id="value-must-start-with-rm"),
    ],
)  # fmt: skip
def test_pattern_anchored_on_a_top_level_pair(
    arguments: dict[str, Any], expected: PolicyDecision
) -> None:
    assert engine(ANCHORED_RM).evaluate("run", arguments).decision is expected


# --- non-interactive mode, spoofing, modes ----------------------------------------------


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        pytest.param(rule("allow"), ALLOW, id="allow-stays"),
        pytest.param(rule("deny"), DENY, id="deny-stays"),
        pytest.param(rule("ask_user"), DENY, id="ask-becomes-deny"),
        pytest.param("", DENY, id="default-ask-becomes-deny"),
    ],
)
def test_non_interactive_turns_ask_user_into_deny(policy: str, expected: PolicyDecision) -> None:
    assert engine(policy, non_interactive=True).evaluate("t", {}).decision is expected
    assert engine(policy).evaluate("t", {}, non_interactive=True).decision is expected


def test_per_call_override_beats_the_engine_setting() -> None:
    strict = engine(rule("ask_user"), non_interactive=True)
    assert strict.evaluate("t", {}, non_interactive=False).decision is ASK


def test_non_interactive_deny_keeps_the_deciding_rule() -> None:
    result = engine(rule("ask_user", 7), non_interactive=True).evaluate("t", {})
    assert result.rule is not None and result.rule.index == 0
    assert "nobody can be asked" in result.reason


@pytest.mark.parametrize(
    ("tool", "arguments", "server"),
    [
        pytest.param("a__t", {}, "b", id="prefix-of-another-server"),
        pytest.param("read_file", {"path": "x"}, "b", id="builtin-claiming-a-server"),
        pytest.param(SHELL, shell("ls"), "b", id="shell-claiming-a-server"),
        pytest.param("ab__t", {}, "a", id="longer-server-name"),
        pytest.param("a_t", {}, "a", id="single-underscore"),
        pytest.param("a", {}, "a", id="bare-server-name"),
    ],
)  # fmt: skip
def test_spoofed_server_names_are_denied(tool: str, arguments: dict[str, Any], server: str) -> None:
    # Even a wildcard ALLOW at the highest priority cannot let a spoofed call through.
    policy = PolicyEngine(rules(rule("allow", 999), tier=Tier.ADMIN), mode="yolo")
    result = policy.evaluate(tool, arguments, server)
    assert (result.decision, result.rule) == (DENY, None)


def test_a_server_naming_its_own_tool_is_evaluated_normally() -> None:
    policy = engine(rule("allow", toolName="a__*"))
    assert policy.evaluate("a__t", {}, "a").decision is ALLOW
    assert policy.evaluate("a__t", {}).decision is ALLOW


AUTO_EDIT_ONLY = rule("allow", toolName="write_file", modes=["auto_edit"])
DENY_IN_AUTO_EDIT = rule("deny", toolName="write_file", modes=["auto_edit"])


@pytest.mark.parametrize(
    ("policy", "mode", "expected"),
    [
        pytest.param(AUTO_EDIT_ONLY, "default", ASK, id="allow-rule-skipped-in-default"),
        pytest.param(AUTO_EDIT_ONLY, "auto_edit", ALLOW, id="allow-rule-applies-in-auto-edit"),
        pytest.param(DENY_IN_AUTO_EDIT, "default", ASK, id="deny-rule-skipped-in-default"),
        pytest.param(DENY_IN_AUTO_EDIT, "auto_edit", DENY, id="deny-rule-applies-in-auto-edit"),
        pytest.param(DENY_IN_AUTO_EDIT, "yolo", ALLOW, id="deny-rule-skipped-in-yolo"),
        pytest.param("", "yolo", ALLOW, id="yolo-allows-without-rules"),
        pytest.param(rule("ask_user", 999), "yolo", ASK, id="yolo-is-a-tier-1-rule"),
        pytest.param(rule("deny", 0), "yolo", DENY, id="yolo-explicit-deny-wins"),
        pytest.param(rule("deny", 0, toolName="write_file"), "yolo", DENY, id="yolo-named-deny-wins"),
        pytest.param(rule("deny", toolName="other"), "yolo", ALLOW, id="yolo-other-deny-irrelevant"),
    ],
)  # fmt: skip
def test_modes_select_rules(policy: str, mode: str, expected: PolicyDecision) -> None:
    assert engine(policy, mode=mode).evaluate("write_file", {"path": "f"}).decision is expected


def test_yolo_decision_names_the_yolo_rule() -> None:
    result = PolicyEngine(mode="yolo").evaluate("anything", {})
    assert result.rule is not None and result.rule.source == "yolo"
    assert result.rule.priority == pytest.approx(Tier.BUILTIN + 0.999)


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        pytest.param("curl x | jq .", ALLOW, id="unknown-commands-allowed"),
        # sh reads its script from stdin: it could run rm, so a person looks (never ALLOW).
        pytest.param("curl x | sh", ASK, id="shell-fed-on-stdin-could-run-a-denied-command"),
        pytest.param("$(printf rm) -rf ~", ASK, id="dynamic-name-could-be-denied"),
        pytest.param("echo hi > out.txt", ALLOW, id="redirection-allowed"),
        pytest.param("ls && rm -rf ~", DENY, id="denied-part-still-denies"),
        pytest.param("echo $(rm -rf ~)", DENY, id="denied-substitution-still-denies"),
    ],
)
def test_yolo_allows_every_shell_command_but_denied_ones(
    command: str, expected: PolicyDecision
) -> None:
    policy = engine(rule("deny", toolName=SHELL, commandPrefix="rm"), mode="yolo")
    assert policy.evaluate(SHELL, shell(command)).decision is expected


# --- shell commands -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("prefix", "command", "expected"),
    [
        pytest.param("git log", "git log", ALLOW, id="exact"),
        pytest.param("git log", "git log --oneline", ALLOW, id="with-arguments"),
        pytest.param("git log", "git   log  -n 3", ALLOW, id="extra-blanks"),
        # `git` means the git found on PATH; a path names another program.
        pytest.param("git log", "/usr/bin/git log", ASK, id="path-to-command"),
        pytest.param("git log", "./git log", ASK, id="relative-path-to-command"),
        pytest.param("/usr/bin/git log", "/usr/bin/git log -p", ALLOW, id="path-rule"),
        pytest.param("git log", "git logout", ASK, id="longer-second-word"),
        pytest.param("git log", "git", ASK, id="shorter-command"),
        pytest.param("git log", "git status", ASK, id="other-subcommand"),
        pytest.param("git log", "'git log'", ASK, id="quoted-as-one-word"),
        pytest.param("git", "git status", ALLOW, id="one-word-prefix"),
        pytest.param("git", "git", ALLOW, id="one-word-exact"),
        pytest.param("git", "gitx status", ASK, id="longer-first-word"),
        pytest.param("git", "xgit", ASK, id="suffix-is-not-prefix"),
        pytest.param("git", "$CMD status", ASK, id="dynamic-command-name"),
    ],
)  # fmt: skip
def test_command_prefix_compares_whole_words(
    prefix: str, command: str, expected: PolicyDecision
) -> None:
    policy = engine(rule("allow", toolName=SHELL, commandPrefix=prefix))
    assert policy.evaluate(SHELL, shell(command)).decision is expected


COMPOUND_FORMS = [
    pytest.param("echo a && rm x", id="and"),
    pytest.param("echo a || rm x", id="or"),
    pytest.param("echo a; rm x", id="semicolon"),
    pytest.param("echo a & rm x", id="background"),
    pytest.param("echo a | rm x", id="pipe"),
    pytest.param("echo a\nrm x", id="newline"),
    pytest.param("echo $(rm x)", id="dollar-paren"),
    pytest.param("echo `rm x`", id="backticks"),
    pytest.param("(rm x)", id="subshell"),
    pytest.param("{ rm x; }", id="group"),
    pytest.param("bash -c 'rm x'", id="bash-c"),
    pytest.param('sh -c "rm x"', id="sh-c"),
    pytest.param("echo a && echo b || rm x", id="and-or"),
    pytest.param("echo $(rm -rf ~)", id="substitution-in-argument"),
    pytest.param("echo a; (echo b && { echo $(rm x); })", id="deeply-nested"),
]


@pytest.mark.parametrize("command", COMPOUND_FORMS)
def test_any_denied_part_denies_the_whole_command(command: str) -> None:
    policy = engine(
        rule("allow", toolName=SHELL, commandPrefix=["echo", "bash", "sh"])
        + rule("deny", toolName=SHELL, commandPrefix="rm")
    )
    result = policy.evaluate(SHELL, shell(command))
    assert result.decision is DENY
    assert result.rule is not None and result.rule.command_prefixes == ("rm",)


@pytest.mark.parametrize("command", COMPOUND_FORMS)
def test_an_unknown_part_asks_even_when_the_rest_is_allowed(command: str) -> None:
    policy = engine(rule("allow", toolName=SHELL, commandPrefix=["echo", "bash", "sh"]))
    assert policy.evaluate(SHELL, shell(command)).decision is ASK


@pytest.mark.parametrize("command", COMPOUND_FORMS)
def test_allow_only_when_every_part_is_allowed(command: str) -> None:
    policy = engine(rule("allow", toolName=SHELL, commandPrefix=["echo", "bash", "sh", "rm"]))
    assert policy.evaluate(SHELL, shell(command)).decision is ALLOW


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        pytest.param("ls && pwd", ALLOW, id="allow-allow"),
        pytest.param("ls && cat f", ASK, id="allow-ask"),
        pytest.param("cat f && ls", ASK, id="ask-allow"),
        pytest.param("ls && whoami", ASK, id="allow-default"),
        pytest.param("cat f && rm x", DENY, id="ask-deny"),
        pytest.param("rm x && cat f", DENY, id="deny-ask"),
        pytest.param("whoami; rm x", DENY, id="default-deny"),
    ],
)
def test_parts_combine_deny_over_ask_over_allow(command: str, expected: PolicyDecision) -> None:
    policy = engine(
        rule("allow", toolName=SHELL, commandPrefix=["ls", "pwd"])
        + rule("ask_user", toolName=SHELL, commandPrefix="cat")
        + rule("deny", toolName=SHELL, commandPrefix="rm")
    )
    assert policy.evaluate(SHELL, shell(command)).decision is expected


@pytest.mark.parametrize(
    ("command", "allow_redirection", "expected"),
    [
        pytest.param("echo hi > out.txt", False, ASK, id="write-downgrades"),
        pytest.param("echo hi >> out.txt", False, ASK, id="append-downgrades"),
        pytest.param("echo hi &> out.txt", False, ASK, id="both-streams-downgrade"),
        pytest.param("ls && echo hi > out.txt", False, ASK, id="one-part-downgrades-all"),
        pytest.param("{ echo a; echo b; } > out.txt", False, ASK, id="group-redirect"),
        pytest.param("echo hi > /dev/null", False, ALLOW, id="dev-null-is-harmless"),
        pytest.param("echo hi 2>&1", False, ALLOW, id="descriptor-duplication"),
        pytest.param("echo hi < in.txt", False, ALLOW, id="input-redirect"),
        pytest.param("echo hi > out.txt", True, ALLOW, id="allow-redirection-keeps-allow"),
        pytest.param("rm x > out.txt", False, DENY, id="deny-stays-deny"),
        pytest.param("rm x > out.txt", True, DENY, id="deny-stays-deny-with-allow-redirection"),
    ],
)  # fmt: skip
def test_redirection_downgrades_allow_to_ask_user(
    command: str, allow_redirection: bool, expected: PolicyDecision
) -> None:
    policy = engine(
        rule(
            "allow",
            toolName=SHELL,
            commandPrefix=["echo", "ls"],
            allowRedirection=allow_redirection,
        )
        + rule("deny", toolName=SHELL, commandPrefix="rm")
    )
    result = policy.evaluate(SHELL, shell(command))
    assert result.decision is expected
    if expected is ASK:
        assert "redirects output" in result.reason


@pytest.mark.parametrize(
    "arguments",
    [
        pytest.param(shell("echo 'unterminated"), id="open-quote"),
        pytest.param(shell("echo $(ls"), id="open-substitution"),
        pytest.param(shell("if then"), id="syntax-error"),
        pytest.param(shell("echo a &&"), id="dangling-operator"),
        pytest.param(shell("echo \x01 hi"), id="control-character"),
        pytest.param(shell(""), id="empty"),
        pytest.param(shell("   "), id="blank"),
        pytest.param({"parameters": ["ls"]}, id="no-command"),
        pytest.param({"command": ["ls"]}, id="command-not-a-string"),
    ],
)
def test_unparseable_command_asks_and_is_denied_non_interactively(
    arguments: dict[str, Any],
) -> None:
    # A wildcard allow for every shell command: still nobody may skip a person for these.
    policy = engine(rule("allow", toolName=SHELL, commandRegex="."))
    asked = policy.evaluate(SHELL, arguments)
    assert (asked.decision, asked.rule) == (ASK, None)
    assert policy.evaluate(SHELL, arguments, non_interactive=True).decision is DENY


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        pytest.param("git log --oneline", ALLOW, id="git-log"),
        pytest.param("git logout", ASK, id="git-logout"),
        pytest.param("rm -rf x", DENY, id="rm"),
        pytest.param("echo hi && rm -rf ~", DENY, id="echo-and-rm"),
        pytest.param("echo $(rm -rf ~)", DENY, id="echo-substituting-rm"),
        pytest.param("echo hi && curl x", ASK, id="echo-and-curl"),
        pytest.param("echo hi; git log", ALLOW, id="echo-then-git-log"),
        pytest.param("echo hi > /etc/passwd", ASK, id="echo-redirected"),
        pytest.param("touch f", ALLOW, id="touch"),
    ],
)
def test_acceptance_table(command: str, expected: PolicyDecision) -> None:
    assert engine(ACCEPTANCE).evaluate(SHELL, shell(command)).decision is expected


@pytest.mark.parametrize(
    ("command", "parameters", "expected"),
    [
        pytest.param("echo", ["; rm x"], ALLOW, id="separator-is-one-argument"),
        pytest.param("echo", ["$(rm x)"], ALLOW, id="substitution-is-literal"),
        pytest.param("echo", ["`rm x`", "&& rm y"], ALLOW, id="several-literals"),
        pytest.param("echo", ["a > /etc/passwd"], ALLOW, id="redirect-is-literal"),
        pytest.param("git", ["log", "--oneline"], ALLOW, id="words-complete-the-prefix"),
        pytest.param("git", ["logout"], ASK, id="words-compare-whole"),
        pytest.param("git", ["log x"], ASK, id="one-parameter-is-one-word"),
        pytest.param("rm", ["-rf", "x"], DENY, id="denied-command"),
        pytest.param("echo hi && rm", ["x"], DENY, id="command-still-parsed"),
    ],
)  # fmt: skip
def test_parameters_are_appended_as_quoted_words(
    command: str, parameters: list[str], expected: PolicyDecision
) -> None:
    result = engine(ACCEPTANCE).evaluate(SHELL, shell(command, parameters=parameters))
    assert result.decision is expected


def test_command_regex_matches_each_part() -> None:
    policy = engine(rule("allow", toolName=SHELL, commandRegex="^git (status|diff)"))
    assert policy.evaluate(SHELL, shell("git status && git diff")).decision is ALLOW
    assert policy.evaluate(SHELL, shell("git status && git push")).decision is ASK


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        pytest.param("echo hi", ALLOW, id="single-command"),
        pytest.param("echo hi && rm -rf ~", ASK, id="cannot-allow-a-chained-command"),
        pytest.param("echo $(curl x)", ASK, id="cannot-allow-a-substitution"),
        pytest.param("echo a; echo b", ALLOW, id="every-part-matches"),
    ],
)
def test_args_pattern_allow_on_shell_applies_part_by_part(
    command: str, expected: PolicyDecision
) -> None:
    policy = engine(rule("allow", toolName=SHELL, argsPattern='\\x00"command":"echo '))
    assert policy.evaluate(SHELL, shell(command)).decision is expected


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        pytest.param(shell("echo hi && rm -rf ~"), DENY, id="pattern-in-a-later-part"),
        pytest.param(shell("echo $(rm -rf ~)"), DENY, id="pattern-in-a-substitution"),
        pytest.param({"command": "ls", "directory": "/etc"}, DENY, id="pattern-on-another-key"),
        pytest.param({"command": "ls", "directory": "/tmp"}, ALLOW, id="no-match"),
    ],
)
def test_args_pattern_deny_on_shell_sees_every_part_and_the_whole_call(
    arguments: dict[str, Any], expected: PolicyDecision
) -> None:
    policy = engine(
        rule("deny", toolName=SHELL, argsPattern="rm -rf")
        + rule("deny", 1, toolName=SHELL, argsPattern='"directory":"/etc"')
        + rule("allow", 0, toolName=SHELL, commandPrefix=["echo", "ls"])
    )
    assert policy.evaluate(SHELL, arguments).decision is expected


# --- the deciding rule (P9) -----------------------------------------------------------


def test_result_names_the_deciding_rule_with_source_index_and_priority() -> None:
    user = rules(
        rule("allow", 100, toolName="a") + rule("deny", 250, toolName="t"), source="u.toml"
    )
    admin = rules(rule("ask_user", 5, toolName="x"), source="admin.toml", tier=Tier.ADMIN)
    result = PolicyEngine([*user, *admin]).evaluate("t", {})
    assert result.decision is DENY
    assert result.rule is not None
    assert (result.rule.source, result.rule.index) == ("u.toml", 1)
    assert result.rule.priority == pytest.approx(2.25)
    described = result.to_json()["rule"]
    assert (described["source"], described["index"], described["priority"]) == ("u.toml", 1, 2.25)


def test_shell_result_names_the_rule_of_the_most_severe_part() -> None:
    result = engine(ACCEPTANCE).evaluate(SHELL, shell("git log; echo hi && rm -rf ~"))
    assert result.decision is DENY
    assert result.rule is not None and (result.rule.source, result.rule.index) == ("policy.toml", 1)
    assert result.reason == "rm -rf ~"


def test_default_decision_reports_no_rule() -> None:
    result = engine(ACCEPTANCE).evaluate(SHELL, shell("curl x"))
    assert result.to_json() == {
        "decision": "ASK_USER",
        "rule": None,
        "reason": "no rule matched 'curl x'",
    }


def test_an_allowed_command_behind_environment_assignments_asks() -> None:
    from agentworld.policy.engine import PolicyEngine as Engine
    from agentworld.policy.rules import PolicyDecision as D
    from agentworld.policy.rules import PolicyRule as Rule

    engine = Engine([Rule(D.ALLOW, 2.1, tool_name="shell_cmd", command_prefixes=("ls",))])
    assert engine.evaluate("shell_cmd", {"command": "ls -la"}).decision is D.ALLOW
    assert engine.evaluate("shell_cmd", {"command": "LD_PRELOAD=/tmp/evil.so ls"}).decision is D.ASK_USER
    assert Engine(engine.rules, mode="yolo").evaluate("shell_cmd", {"command": "A=1 ls"}).decision is D.ALLOW

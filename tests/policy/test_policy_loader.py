"""Loading TOML policy files strictly (SPEC §2.7 P3, P5): every error typed, placed and reported."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentworld.policy.engine import PolicyEngine
from agentworld.policy.loader import (
    MAX_PATTERN,
    PolicyLoadError,
    builtin_rules,
    compile_pattern,
    legacy_rules,
    load_policy_file,
    load_policy_text,
)
from agentworld.policy.rules import PolicyDecision, Tier

GOOD = '[[rule]]\ntoolName = "read_file"\ndecision = "allow"\npriority = 10\n'


def write(tmp_path: Path, text: str, name: str = "policy.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def only_error(errors: list[PolicyLoadError]) -> PolicyLoadError:
    assert len(errors) == 1, errors
    return errors[0]


# --- whole-file errors ----------------------------------------------------------------


def test_missing_file_is_a_file_read_error(tmp_path: Path) -> None:
    path = tmp_path / "absent.toml"
    loaded = load_policy_file(path)
    error = only_error(loaded.errors)
    assert (error.type, error.file, error.rule) == ("file_read", str(path), None)
    assert loaded.rules == []


def test_file_that_is_not_utf8_is_a_file_read_error(tmp_path: Path) -> None:
    path = tmp_path / "latin1.toml"
    path.write_bytes(b'[[rule]]\nname = "caf\xe9"\n')
    assert only_error(load_policy_file(path).errors).type == "file_read"


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("[[rule]\ndecision = 'allow'", id="unclosed-table"),
        pytest.param("[[rule]]\ndecision = allow\npriority = 1", id="bare-word-value"),
        pytest.param("[[rule]]\npriority = 1\npriority = 2", id="duplicate-key"),
    ],
)
def test_invalid_toml_is_a_toml_parse_error_and_loads_nothing(tmp_path: Path, text: str) -> None:
    path = write(tmp_path, GOOD + text)
    loaded = load_policy_file(path)
    error = only_error(loaded.errors)
    assert (error.type, error.file, error.rule) == ("toml_parse", str(path), None)
    assert loaded.rules == []


@pytest.mark.parametrize(
    "text",
    [
        pytest.param('rule = "allow everything"', id="rule-not-an-array"),
        pytest.param(GOOD + "[settings]\nstrict = true\n", id="unknown-top-level-table"),
    ],
)
def test_bad_document_shape_is_a_schema_error_without_a_rule(tmp_path: Path, text: str) -> None:
    path = write(tmp_path, text)
    error = only_error(load_policy_file(path).errors)
    assert (error.type, error.file, error.rule) == ("schema_validation", str(path), None)


def test_empty_file_loads_no_rules_and_no_errors(tmp_path: Path) -> None:
    loaded = load_policy_file(write(tmp_path, "# nothing yet\n"))
    assert (loaded.rules, loaded.errors) == ([], [])


# --- errors in one rule ---------------------------------------------------------------

BAD_RULES = [
    # schema_validation: the table does not fit the schema.
    pytest.param('toolName = "t"\nargsPatern = "x"\ndecision = "deny"\npriority = 1', "schema_validation", "argsPatern", id="unknown-key-misspelt"),
    pytest.param('toolName = "t"\ndecison = "deny"\ndecision = "deny"\npriority = 1', "schema_validation", "decison", id="unknown-key-beside-known"),
    pytest.param('toolName = "t"\npriority = 1', "schema_validation", "decision", id="missing-decision"),
    pytest.param('toolName = "t"\ndecision = "deny"', "schema_validation", "priority", id="missing-priority"),
    pytest.param('decision = "deny"\npriority = 1.5', "schema_validation", "priority", id="float-priority"),
    pytest.param('decision = "deny"\npriority = 1.0', "schema_validation", "priority", id="integral-float-priority"),
    pytest.param('decision = "deny"\npriority = 1000', "schema_validation", "priority", id="priority-too-high"),
    pytest.param('decision = "deny"\npriority = -1', "schema_validation", "priority", id="priority-negative"),
    pytest.param('decision = "deny"\npriority = true', "schema_validation", "priority", id="boolean-priority"),
    pytest.param('decision = "deny"\npriority = "5"', "schema_validation", "priority", id="string-priority"),
    pytest.param('decision = "block"\npriority = 1', "schema_validation", "decision", id="bad-decision-word"),
    pytest.param('decision = "ALLOW"\npriority = 1', "schema_validation", "decision", id="decision-is-lower-case"),
    pytest.param('decision = "deny"\npriority = 1\nmodes = ["turbo"]', "schema_validation", "modes", id="bad-mode"),
    pytest.param('decision = "deny"\npriority = 1\nmodes = "yolo"', "schema_validation", "modes", id="modes-not-a-list"),
    pytest.param('decision = "allow"\npriority = 1\nallowRedirection = "yes"', "schema_validation", "allowRedirection", id="allow-redirection-not-bool"),
    pytest.param('toolName = 3\ndecision = "deny"\npriority = 1', "schema_validation", "toolName", id="tool-name-not-a-string"),
    # rule_validation: each field is fine, their combination is not.
    pytest.param('toolName = "shell_cmd"\nargsPattern = "x"\ncommandPrefix = "git"\ndecision = "allow"\npriority = 1', "rule_validation", "combined", id="args-pattern-with-command-prefix"),
    pytest.param('toolName = "shell_cmd"\ncommandRegex = "x"\ncommandPrefix = "git"\ndecision = "allow"\npriority = 1', "rule_validation", "combined", id="command-regex-with-command-prefix"),
    pytest.param('toolName = "shell_cmd"\nargsPattern = "x"\ncommandRegex = "git"\ndecision = "allow"\npriority = 1', "rule_validation", "combined", id="args-pattern-with-command-regex"),
    pytest.param('toolName = "read_file"\ncommandPrefix = "git"\ndecision = "allow"\npriority = 1', "rule_validation", "shell_cmd only", id="command-prefix-on-non-shell-tool"),
    pytest.param('toolName = ["shell_cmd", "read_file"]\ncommandPrefix = "git"\ndecision = "allow"\npriority = 1', "rule_validation", "shell_cmd only", id="command-prefix-on-tool-list"),
    pytest.param('mcpName = "srv"\ncommandRegex = "git"\ndecision = "allow"\npriority = 1', "rule_validation", "shell_cmd only", id="command-regex-on-mcp-server"),
    pytest.param('toolName = "shell_cmd"\ncommandPrefix = ""\ndecision = "allow"\npriority = 1', "rule_validation", "empty", id="empty-command-prefix"),
    pytest.param('toolName = "shell_cmd"\ncommandPrefix = "   "\ndecision = "allow"\npriority = 1', "rule_validation", "empty", id="blank-command-prefix"),
    pytest.param('toolName = "shell_cmd"\ncommandPrefix = []\ndecision = "allow"\npriority = 1', "rule_validation", "empty", id="empty-command-prefix-list"),
    pytest.param('toolName = "shell_cmd"\ncommandPrefix = ["git", ""]\ndecision = "allow"\npriority = 1', "rule_validation", "empty", id="empty-prefix-in-list"),
    pytest.param("toolName = \"shell_cmd\"\ncommandPrefix = \"git 'log\"\ndecision = \"allow\"\npriority = 1", "rule_validation", "not valid shell", id="unbalanced-quote-in-prefix"),
    pytest.param('toolName = []\ndecision = "allow"\npriority = 1', "rule_validation", "toolName", id="empty-tool-name-list"),
    pytest.param('toolName = "*_file"\ndecision = "deny"\npriority = 1', "rule_validation", "only allowed at the end", id="star-at-start"),
    pytest.param('toolName = "git*hub"\ndecision = "deny"\npriority = 1', "rule_validation", "only allowed at the end", id="star-in-middle"),
    pytest.param('toolName = "**"\ndecision = "deny"\npriority = 1', "rule_validation", "only allowed at the end", id="double-star"),
    pytest.param('toolName = ["read_file", "a*b"]\ndecision = "deny"\npriority = 1', "rule_validation", "'a*b'", id="misplaced-star-in-list"),
    pytest.param('mcpName = "git*"\ndecision = "deny"\npriority = 1', "rule_validation", "mcpName", id="star-in-mcp-name"),
    pytest.param('mcpName = ""\ndecision = "deny"\npriority = 1', "rule_validation", "mcpName", id="empty-mcp-name"),
    pytest.param('toolName = "shell_*"\ncommandPrefix = "git"\ndecision = "allow"\npriority = 1', "rule_validation", "shell_cmd only", id="command-prefix-on-prefix-star"),
    # regex_compilation: the pattern is refused.
    pytest.param('toolName = "t"\nargsPattern = "(unclosed"\ndecision = "deny"\npriority = 1', "regex_compilation", "missing )", id="invalid-regex"),
    pytest.param('toolName = "t"\nargsPattern = "[z-a]"\ndecision = "deny"\npriority = 1', "regex_compilation", "invalid character class range", id="bad-character-range"),
    # RE2 (linear time) refuses what needs backtracking, with its own reason.
    pytest.param("toolName = \"t\"\nargsPattern = '(a)\\1'\ndecision = \"deny\"\npriority = 1", "regex_compilation", "invalid escape sequence: \\1", id="backreference"),
    pytest.param("toolName = \"t\"\nargsPattern = '(?P<n>a)(?P=n)'\ndecision = \"deny\"\npriority = 1", "regex_compilation", "no backreferences or lookaround", id="named-backreference"),
    pytest.param("toolName = \"t\"\nargsPattern = 'rm(?= -rf)'\ndecision = \"deny\"\npriority = 1", "regex_compilation", "invalid perl operator: (?=", id="lookahead"),
    pytest.param("toolName = \"t\"\nargsPattern = 'rm(?! -i)'\ndecision = \"deny\"\npriority = 1", "regex_compilation", "invalid perl operator: (?!", id="negative-lookahead"),
    pytest.param("toolName = \"t\"\nargsPattern = '(?<=sudo )rm'\ndecision = \"deny\"\npriority = 1", "regex_compilation", "invalid perl operator: (?<", id="lookbehind"),
    pytest.param("toolName = \"shell_cmd\"\ncommandRegex = '^(?!git )'\ndecision = \"deny\"\npriority = 1", "regex_compilation", "no backreferences or lookaround", id="lookaround-in-command-regex"),
    pytest.param(f'toolName = "t"\nargsPattern = "{"a" * (MAX_PATTERN + 1)}"\ndecision = "deny"\npriority = 1', "regex_compilation", "1025 characters", id="pattern-of-1025-chars"),
]  # fmt: skip


@pytest.mark.parametrize(("body", "error_type", "message_part"), BAD_RULES)
def test_bad_rule_is_reported_with_type_file_and_index_while_good_rules_load(
    tmp_path: Path, body: str, error_type: str, message_part: str
) -> None:
    path = write(tmp_path, f"{GOOD}\n[[rule]]\n{body}\n\n{GOOD}")
    loaded = load_policy_file(path)
    error = only_error(loaded.errors)
    assert (error.type, error.file, error.rule) == (error_type, str(path), 1)
    assert message_part in error.message
    assert f"{path}, rule 2: {error_type}: " in str(error)  # numbered from 1
    assert [r.index for r in loaded.rules] == [0, 2]
    assert all(r.source == str(path) for r in loaded.rules)


def test_every_bad_rule_of_a_file_is_reported(tmp_path: Path) -> None:
    bodies = [
        'decision = "deny"\npriority = 1000',
        GOOD.removeprefix("[[rule]]\n"),
        "toolName = \"t\"\nargsPattern = '(a)\\1'\ndecision = \"deny\"\npriority = 1",
        'toolName = "read_file"\ncommandPrefix = "git"\ndecision = "allow"\npriority = 1',
    ]
    loaded = load_policy_file(write(tmp_path, "\n".join(f"[[rule]]\n{b}\n" for b in bodies)))
    assert [(e.type, e.rule) for e in loaded.errors] == [
        ("schema_validation", 0),
        ("regex_compilation", 2),
        ("rule_validation", 3),
    ]
    assert [(r.index, r.tool_name) for r in loaded.rules] == [(1, "read_file")]


def test_pattern_of_exactly_the_limit_is_accepted() -> None:
    assert compile_pattern("a" * MAX_PATTERN).pattern == "a" * MAX_PATTERN


@pytest.mark.parametrize(
    "pattern",
    [
        '\\x00"command":"rm ',
        '"env":"(prod|staging)"',
        "^(foo|bar)\\.(baz)+$",
        "(ab)+c",
        "a+b*c{2,}",
        "(\\+)+",
        "(?i)secret|token",
        "\\p{Greek}+",
    ],
)
def test_ordinary_patterns_compile(pattern: str) -> None:
    assert compile_pattern(pattern).pattern == pattern


# --- what a good rule becomes ----------------------------------------------------------


def test_tool_name_list_gives_one_rule_per_name() -> None:
    text = '[[rule]]\ntoolName = ["a", "b", "c"]\ndecision = "deny"\npriority = 7\nname = "abc"\n'
    loaded = load_policy_text(text, source="p.toml")
    assert loaded.errors == []
    assert [r.tool_name for r in loaded.rules] == ["a", "b", "c"]
    assert {(r.index, r.name, r.source, r.decision) for r in loaded.rules} == {
        (0, "abc", "p.toml", PolicyDecision.DENY)
    }


@pytest.mark.parametrize(
    ("fields", "names"),
    [
        pytest.param('mcpName = "srv"', ["srv__*"], id="server-alone"),
        pytest.param('mcpName = "srv"\ntoolName = "t"', ["srv__t"], id="server-and-tool"),
        pytest.param('mcpName = "srv"\ntoolName = ["t", "u"]', ["srv__t", "srv__u"], id="server-and-tools"),
        pytest.param("", [None], id="wildcard"),
        pytest.param('commandPrefix = "git"', ["shell_cmd"], id="command-prefix-implies-shell"),
        pytest.param('toolName = "*"\ncommandPrefix = "git"', ["shell_cmd"], id="command-prefix-with-star"),
        pytest.param('toolName = "*"', ["*"], id="star"),
        pytest.param('toolName = "read_*"', ["read_*"], id="prefix-star"),
        pytest.param('toolName = ["read_*", "shell_cmd"]', ["read_*", "shell_cmd"], id="list-with-prefix-star"),
        pytest.param('mcpName = "srv"\ntoolName = "get_*"', ["srv__get_*"], id="server-and-prefix-star"),
        pytest.param('mcpName = "srv"\ntoolName = "*"', ["srv__*"], id="server-and-star"),
    ],
)  # fmt: skip
def test_tool_names_of_a_rule(fields: str, names: list[str | None]) -> None:
    loaded = load_policy_text(f'[[rule]]\n{fields}\ndecision = "deny"\npriority = 1\n', source="p")
    assert loaded.errors == []
    assert [r.tool_selector for r in loaded.rules] == names
    assert [r.describe()["toolName"] for r in loaded.rules] == names


def test_rule_fields_are_carried_over() -> None:
    text = """
[[rule]]
name = "git reads"
toolName = "shell_cmd"
commandPrefix = ["git log", "git status"]
decision = "allow"
priority = 42
modes = ["default", "auto_edit"]
allowRedirection = true
denyMessage = "never shown"
"""
    (loaded,) = load_policy_text(text, source="p.toml").rules
    assert loaded.command_prefixes == ("git log", "git status")
    assert loaded.modes == frozenset({"default", "auto_edit"})
    assert loaded.allow_redirection is True
    assert (loaded.name, loaded.deny_message) == ("git reads", "never shown")


@pytest.mark.parametrize("tier", [Tier.BUILTIN, Tier.USER, Tier.ADMIN])
@pytest.mark.parametrize("priority", [0, 1, 500, 999])
def test_effective_priority_is_tier_plus_priority_over_1000(tier: int, priority: int) -> None:
    text = f'[[rule]]\ndecision = "allow"\npriority = {priority}\n'
    (loaded,) = load_policy_text(text, source="p", tier=tier).rules
    assert loaded.priority == pytest.approx(tier + priority / 1000)
    assert tier <= loaded.priority < tier + 1


def test_default_tier_is_the_user_tier() -> None:
    (loaded,) = load_policy_text('[[rule]]\ndecision = "allow"\npriority = 5\n', source="p").rules
    assert loaded.priority == pytest.approx(2.005)


# --- shipped and legacy rules -----------------------------------------------------------


def test_builtin_rules_load_without_errors() -> None:
    loaded = builtin_rules()
    assert loaded
    assert all(Tier.BUILTIN <= r.priority < Tier.USER for r in loaded)
    assert all(r.source == "built-in defaults" for r in loaded)


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    [
        pytest.param("read_file", {"path": "a.txt"}, PolicyDecision.ALLOW, id="read-file"),
        pytest.param("list_files", {"path": "."}, PolicyDecision.ALLOW, id="list-files"),
        pytest.param("shell_cmd", {"command": "ls"}, PolicyDecision.ASK_USER, id="shell"),
        pytest.param("shell_cmd", {"command": "ls && pwd"}, PolicyDecision.ASK_USER, id="shell-compound"),
        pytest.param("write_file", {"path": "a.txt"}, PolicyDecision.ASK_USER, id="other-tool"),
    ],
)  # fmt: skip
def test_builtin_rules_allow_read_only_tools_and_ask_for_shell(
    tool: str, arguments: dict[str, str], expected: PolicyDecision
) -> None:
    assert PolicyEngine(builtin_rules()).evaluate(tool, arguments).decision is expected


def test_legacy_tool_names_take_the_tool_name_wildcards() -> None:
    policy = PolicyEngine(legacy_rules(allowed_tools=["read_*"], excluded_tools=["*"]))
    assert policy.evaluate("read_file", {}).decision is PolicyDecision.DENY  # 2.4 beats 2.3
    assert PolicyEngine(legacy_rules(allowed_tools=["read_*"], excluded_tools=[])).evaluate(
        "read_file", {}
    ).decision is PolicyDecision.ALLOW
    calls = [("shell_cmd", {"command": "ls"}), ("write_file", {}), ("github__create_issue", {})]
    for tool, arguments in calls:
        assert policy.evaluate(tool, arguments).decision is PolicyDecision.DENY


def test_legacy_settings_become_rules_at_2_3_and_2_4() -> None:
    legacy = legacy_rules(allowed_tools=["a", "b"], excluded_tools=["c"])
    assert [(r.tool_name, r.decision, r.priority) for r in legacy] == [
        ("a", PolicyDecision.ALLOW, 2.3),
        ("b", PolicyDecision.ALLOW, 2.3),
        ("c", PolicyDecision.DENY, 2.4),
    ]


@pytest.mark.parametrize(
    ("file_priority", "file_decision", "expected"),
    [
        pytest.param(200, "deny", PolicyDecision.ALLOW, id="legacy-allow-beats-file-rule-at-2-2"),
        pytest.param(350, "deny", PolicyDecision.DENY, id="file-rule-at-2-35-beats-legacy-allow"),
        pytest.param(399, "allow", PolicyDecision.DENY, id="excluded-still-denied-below-2-4"),
    ],
)
def test_legacy_rules_sit_among_user_rules(
    file_priority: int, file_decision: str, expected: PolicyDecision
) -> None:
    tool = "a" if file_decision == "deny" else "c"
    user = load_policy_text(
        f'[[rule]]\ntoolName = "{tool}"\ndecision = "{file_decision}"\npriority = {file_priority}\n',
        source="p",
    ).rules
    legacy = legacy_rules(allowed_tools=["a"], excluded_tools=["c"])
    admin = load_policy_text(
        '[[rule]]\ntoolName = "c"\ndecision = "allow"\npriority = 0\n',
        source="admin",
        tier=Tier.ADMIN,
    ).rules
    policy = PolicyEngine([*builtin_rules(), *user, *legacy])
    assert policy.evaluate(tool, {}).decision is expected
    # An admin file outranks every legacy setting.
    assert PolicyEngine([*legacy, *admin]).evaluate("c", {}).decision is PolicyDecision.ALLOW


def test_a_tool_both_allowed_and_excluded_is_denied() -> None:
    legacy = legacy_rules(allowed_tools=["t"], excluded_tools=["t"])
    assert PolicyEngine(legacy).evaluate("t", {}).decision is PolicyDecision.DENY

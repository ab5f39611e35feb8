"""``pathPrefix`` rules for file tools (SPEC P3, F1): loaded strictly, matched on the path
inside the working directory, never on a path that leads out, and, through the runtime's
decision, never borrowed by a link that leads out of the prefix. File changes ask by default."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentworld.policy.engine import PolicyEngine
from agentworld.policy.loader import builtin_rules, load_policy_text
from agentworld.policy.rules import PolicyDecision
from agentworld.runtime.authorizer import decide_call
from agentworld.runtime.path_views import file_call_views

ALLOW_DOCS = (
    '[[rule]]\nname = "docs"\ntoolName = ["write_file", "edit_file"]\npathPrefix = "./docs/"\n'
    'decision = "allow"\npriority = 100\n'
)


def engine(text: str = ALLOW_DOCS) -> PolicyEngine:
    loaded = load_policy_text(text, source="world.toml")
    assert loaded.errors == []
    return PolicyEngine([*builtin_rules(), *loaded.rules])


@pytest.mark.parametrize("tool", ["write_file", "edit_file"])
def test_file_changes_ask_by_default(tool: str) -> None:
    result = PolicyEngine(builtin_rules()).evaluate(tool, {"path": "notes.txt"})
    assert result.decision is PolicyDecision.ASK_USER
    assert result.rule is not None and result.rule.name == "file changes need a person"


@pytest.mark.parametrize(
    ("path", "decision"),
    [
        ("docs/a.md", PolicyDecision.ALLOW),
        ("docs", PolicyDecision.ALLOW),
        ("./docs/sub/b.md", PolicyDecision.ALLOW),
        ("docs2/a.md", PolicyDecision.ASK_USER),
        ("doc", PolicyDecision.ASK_USER),
        ("docs/../notes.txt", PolicyDecision.ASK_USER),
        ("../work/docs/a.md", PolicyDecision.ASK_USER),
        ("/srv/work/docs/a.md", PolicyDecision.ASK_USER),
        ("", PolicyDecision.ASK_USER),
    ],
)
def test_a_path_prefix_matches_paths_inside_it_only(path: str, decision: PolicyDecision) -> None:
    assert engine().evaluate("write_file", {"path": path, "content": "x"}).decision is decision


def test_a_path_prefix_of_dot_is_the_whole_working_directory_and_nothing_outside() -> None:
    whole = engine(ALLOW_DOCS.replace('"./docs/"', '"."'))
    assert whole.evaluate("edit_file", {"path": "any/where.txt"}).decision is PolicyDecision.ALLOW
    assert whole.evaluate("edit_file", {"path": "../elsewhere.txt"}).decision is PolicyDecision.ASK_USER


def test_a_link_in_the_prefix_that_leads_elsewhere_does_not_borrow_its_allow(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "src").mkdir()
    (tmp_path / "docs" / "alias.py").symlink_to("../src/app.py")
    (tmp_path / "src" / "app.py").write_text("")
    rules = engine()
    for path, decision in (("docs/alias.py", PolicyDecision.ASK_USER), ("docs/real.md", PolicyDecision.ALLOW)):
        args = {"path": path, "content": "x"}
        views = file_call_views("write_file", args, str(tmp_path))
        assert decide_call(rules, "write_file", args, views=views).decision is decision, path


def test_a_deny_path_prefix_sees_where_a_link_leads(tmp_path: Path) -> None:
    (tmp_path / "secrets").mkdir()
    (tmp_path / "innocent.txt").symlink_to("secrets/key.txt")
    deny = engine(
        '[[rule]]\ntoolName = ["read_file", "write_file"]\npathPrefix = "secrets"\ndecision = "deny"\npriority = 200\n'
    )
    args = {"path": "innocent.txt", "content": "x"}
    verdict = decide_call(deny, "write_file", args, views=file_call_views("write_file", args, str(tmp_path)))
    assert verdict.decision is PolicyDecision.DENY


def test_list_files_without_a_path_is_the_working_directory() -> None:
    rules = engine('[[rule]]\ntoolName = "list_files"\npathPrefix = "."\ndecision = "deny"\npriority = 1\n')
    assert rules.evaluate("list_files", {}).decision is PolicyDecision.DENY


def test_a_path_prefix_and_an_args_pattern_must_both_match() -> None:
    both = engine(
        '[[rule]]\ntoolName = "write_file"\npathPrefix = "docs"\nargsPattern = "\\\\.md\\""\n'
        'decision = "allow"\npriority = 100\n'
    )
    assert both.evaluate("write_file", {"path": "docs/a.md", "content": ""}).decision is PolicyDecision.ALLOW
    assert both.evaluate("write_file", {"path": "docs/a.py", "content": ""}).decision is PolicyDecision.ASK_USER
    assert both.evaluate("write_file", {"path": "a.md", "content": ""}).decision is PolicyDecision.ASK_USER


@pytest.mark.parametrize(
    ("rule", "says"),
    [
        ('toolName = "shell_cmd"\npathPrefix = "docs"', "file tools only"),
        ('toolName = "*"\npathPrefix = "docs"', "file tools only"),
        ('pathPrefix = "docs"', "file tools only"),
        ('mcpName = "fs"\ntoolName = "write_file"\npathPrefix = "docs"', "file tools only"),
        ('toolName = "write_file"\npathPrefix = "/etc"', "relative to the working directory"),
        ('toolName = "write_file"\npathPrefix = "docs/../.."', "leads out of the working directory"),
        ('toolName = "write_file"\npathPrefix = ""', "must not be empty"),
        ('toolName = "write_file"\npathPrefix = []', "must not be an empty list"),
        ('toolName = "write_file"\npathPrefix = 3', "pathPrefix"),
    ],
)
def test_bad_path_prefix_rules_are_refused_with_the_rule_named(rule: str, says: str) -> None:
    loaded = load_policy_text(f'[[rule]]\n{rule}\ndecision = "allow"\npriority = 1\n', source="bad.toml")
    (error,) = loaded.errors
    assert loaded.rules == [] and error.rule == 0 and says in error.message


def test_the_file_tool_examples_of_the_policy_docs_decide_as_they_say() -> None:
    docs = (Path(__file__).parents[2] / "docs" / "policy.md").read_text()
    start = docs.index("# The agents may change the docs")
    rules = engine(docs[start : docs.index("```", start)])
    decided = {
        path: rules.evaluate(tool, {"path": path, "content": ""}).decision
        for tool, path in (("edit_file", "docs/guide.md"), ("write_file", "CHANGELOG.md"),
                           ("edit_file", "deploy/app.yaml"), ("write_file", "notes/a.md"), ("write_file", "src/a.py"))
    }  # fmt: skip
    assert decided == {
        "docs/guide.md": PolicyDecision.ALLOW,
        "CHANGELOG.md": PolicyDecision.ALLOW,
        "deploy/app.yaml": PolicyDecision.DENY,
        "notes/a.md": PolicyDecision.ALLOW,
        "src/a.py": PolicyDecision.ASK_USER,
    }

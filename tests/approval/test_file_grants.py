"""A session or always approval of a built-in file tool covers the path the person saw, not
every file (SPEC A5, P6).

The shipped defaults ask before ``read_file .env``; a person who answers with scope session
or always gets a grant for that path, never for ``read_file`` as a whole, so ``read_file
.ssh/id_rsa`` is still asked about. Pure: ``grant_for``, ``find_covering_grant``, ``always_rules`` and a real
``PolicyEngine`` with the shipped rules.
"""

from __future__ import annotations

from typing import Any

import pytest

from agentworld.approval.grants import Grant, GrantScope, find_covering_grant, grant_for
from agentworld.policy.engine import PolicyEngine
from agentworld.policy.grant_rules import always_rules
from agentworld.policy.loader import builtin_rules
from agentworld.policy.rules import PolicyDecision

ASK, ALLOW = PolicyDecision.ASK_USER, PolicyDecision.ALLOW


def grant(scope: GrantScope, tool: str, arguments: dict[str, Any], **extra: Any) -> Grant:
    made = grant_for(
        scope, world="w", tool_name=tool, arguments=arguments,
        agent="a1", chat_id="c1", approval_id="approval_1", **extra,
    )
    assert made is not None
    return made


def covers(g: Grant, tool: str, arguments: dict[str, Any]) -> bool:
    return find_covering_grant([g], tool, arguments, agent="a1", chat_id="c1") is g


def engine(*grants: Grant) -> PolicyEngine:
    return PolicyEngine([*builtin_rules(), *always_rules(grants)])


def allowed_by(e: PolicyEngine, arguments: dict[str, Any], g: Grant) -> bool:
    """Whether the "always" rule of ``g`` answers ``read_file`` with ``arguments``."""
    result = e.evaluate("read_file", arguments)
    return result.rule is not None and result.rule.source == f"always:{g.grant_id}"


@pytest.mark.parametrize("scope", ["session", "always"])
def test_a_grant_for_dot_env_covers_dot_env_only(scope: GrantScope) -> None:
    g = grant(scope, "read_file", {"path": ".env"})

    assert g.roots == frozenset({".env"})
    for same in (".env", "./.env", ".//.env", "././.env"):
        assert covers(g, "read_file", {"path": same}), same
    for other in (".ssh/id_rsa", ".env.local", "a/.env", "../.env", "/.env", ".ENV", ""):
        assert not covers(g, "read_file", {"path": other}), other
    assert not covers(g, "read_file", {})
    assert not covers(g, "list_files", {"path": ".env"})


def test_the_paths_are_compared_after_lexical_normalisation() -> None:
    g = grant("session", "read_file", {"path": "./config/../.aws//credentials/"})

    assert g.roots == frozenset({"config/../.aws/credentials"})
    assert covers(g, "read_file", {"path": "config/.././.aws/credentials"})
    assert not covers(g, "read_file", {"path": ".aws/credentials"})  # ``..`` is not collapsed


def test_list_files_without_a_path_is_the_working_directory() -> None:
    g = grant("session", "list_files", {})

    assert g.roots == frozenset({"."})
    for same in ({}, {"path": ""}, {"path": "."}, {"path": "./"}):
        assert covers(g, "list_files", same), same
    assert not covers(g, "list_files", {"path": ".ssh"})


def test_a_read_file_call_without_a_path_is_never_remembered() -> None:
    made = grant_for(
        "session", world="w", tool_name="read_file", arguments={"path": 3},
        agent="a1", chat_id="c1", approval_id="approval_1",
    )
    assert made is None


def test_a_grant_names_the_file_the_call_really_opens_when_told() -> None:
    g = grant("session", "read_file", {"path": "notes.txt"}, views=[{"path": ".env"}])

    assert g.roots == frozenset({"notes.txt", ".env"})


@pytest.mark.parametrize("roots", [None, frozenset()])
def test_a_file_grant_stored_without_paths_covers_nothing(roots: frozenset[str] | None) -> None:
    for scope in ("session", "always"):
        old = Grant(
            grant_id="g_old", world="w", scope=scope, tool_name="read_file",
            agent="a1", chat_id="c1", roots=roots,
        )
        assert not covers(old, "read_file", {"path": ".env"})
        assert always_rules([old]) == []


def test_other_tools_keep_same_tool_coverage() -> None:
    for tool in ("github__read_file", "client.pick", "write_note"):
        g = grant("session", tool, {"path": ".env"})
        assert covers(g, tool, {"path": ".ssh/id_rsa"})
        assert covers(g, tool, {})


def test_the_always_rule_allows_the_approved_path_and_asks_for_the_rest() -> None:
    g = grant("always", "read_file", {"path": ".env"})
    (rule,) = always_rules([g])
    assert rule.args_pattern is not None and rule.priority == pytest.approx(2.95)

    e = engine(g)
    for same in ({"path": ".env"}, {"path": "./.env"}, {"offset": 3, "path": ".env"}):
        assert allowed_by(e, same, g), same
        assert e.evaluate("read_file", same).decision is ALLOW
    for other in (".ssh/id_rsa", ".env.local", "x/.env", "id_rsa"):
        assert e.evaluate("read_file", {"path": other}).decision is ASK, other
    # a nested or quoted lookalike of the pair is not the path
    assert e.evaluate("read_file", {"path": "id_rsa", "note": {"path": ".env"}}).decision is ASK
    assert e.evaluate("read_file", {"path": "id_rsa", "note": '"path":".env"'}).decision is ASK


def test_the_always_rule_escapes_the_path() -> None:
    g = grant("always", "read_file", {"path": 'a.b/c+d (1)/"q"\\.key'})
    e = engine(g)

    assert allowed_by(e, {"path": 'a.b/c+d (1)/"q"\\.key'}, g)
    for other in ('aXb/c+d (1)/"q"\\.key', 'a.b/cd (1)/"q"\\.key', 'a.b/c+d (1)/"q"\\.keys'):
        assert not allowed_by(e, {"path": other}, g), other


def test_without_a_grant_the_defaults_ask_for_secret_files() -> None:
    e = engine()
    assert e.evaluate("read_file", {"path": ".env"}).decision is ASK
    assert e.evaluate("read_file", {"path": ".ssh/id_rsa"}).decision is ASK

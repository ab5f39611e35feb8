"""Who and where a remembered approval covers (SPEC A5): ``session`` is one agent (any case) in
one chat, ``always`` the whole world; tools other than ``shell_cmd`` are covered whole.

Which shell commands a grant covers is in ``test_grant_coverage.py``."""

from __future__ import annotations

from datetime import UTC
from typing import Any

import pytest

from agentworld.approval.grants import Grant, GrantScope, find_covering_grant, grant_for

SHELL = "shell_cmd"


def grant(
    scope: GrantScope,
    tool: str = SHELL,
    arguments: dict[str, Any] | None = None,
    *,
    agent: str = "Alice",
    chat_id: str = "c1",
) -> Grant:
    made = grant_for(
        scope, world="w", tool_name=tool, arguments=arguments or {"command": "ls"},
        agent=agent, chat_id=chat_id, approval_id="approval_1",
    )
    assert made is not None
    return made


def covering(
    grants: list[Grant],
    tool: str = SHELL,
    arguments: dict[str, Any] | None = None,
    *,
    agent: str = "Alice",
    chat_id: str = "c1",
) -> Grant | None:
    return find_covering_grant(
        grants, tool, arguments or {"command": "ls -la"}, agent=agent, chat_id=chat_id
    )


# -- what a grant records --------------------------------------------------------


def test_a_session_grant_records_the_agent_and_the_chat() -> None:
    made = grant("session", arguments={"command": "git status && ls > out.txt"})

    assert (made.world, made.scope, made.tool_name) == ("w", "session", SHELL)
    assert (made.agent, made.chat_id) == ("Alice", "c1")
    assert made.roots == frozenset({"git", "ls"})
    assert made.redirect_targets is None  # nothing placed the target: no write is covered
    assert made.approval_id == "approval_1"


def test_an_always_grant_records_neither_agent_nor_chat() -> None:
    made = grant("always")

    assert (made.scope, made.agent, made.chat_id) == ("always", None, None)
    assert made.roots == frozenset({"ls"})
    assert not made.allow_redirection


def test_every_grant_gets_its_own_id_and_a_utc_creation_time() -> None:
    first, second = grant("session"), grant("session")

    assert first.grant_id != second.grant_id
    assert first.grant_id.startswith("grant_") and second.grant_id.startswith("grant_")
    assert first.created_at is not None
    assert first.created_at.utcoffset() == UTC.utcoffset(None)


def test_a_grant_for_another_tool_keeps_no_command_list() -> None:
    made = grant("session", "deploy", {"target": "a.txt", "content": "x"})

    assert (made.tool_name, made.roots, made.allow_redirection) == ("deploy", None, False)


def test_a_grant_for_a_file_change_names_the_file() -> None:
    made = grant("session", "write_file", {"path": "./docs//a.txt", "content": "x"})

    assert (made.tool_name, made.roots, made.allow_redirection) == ("write_file", frozenset({"docs/a.txt"}), False)


@pytest.mark.parametrize(
    "arguments",
    [{}, {"command": 3}, {"command": "ls", "parameters": "-la"}, {"command": "ls", "parameters": [1]}],
)
def test_a_shell_call_with_unusable_arguments_is_never_remembered(arguments: dict[str, Any]) -> None:
    made = grant_for(
        "always", world="w", tool_name=SHELL, arguments=arguments,
        agent="Alice", chat_id="c1", approval_id="approval_1",
    )
    assert made is None


def test_parameters_given_apart_from_the_command_are_part_of_what_is_approved() -> None:
    made = grant("session", arguments={"command": "ls", "parameters": ["-la", "src"]})

    assert made.roots == frozenset({"ls"})
    assert covering([made], arguments={"command": "ls", "parameters": ["docs"]}) is made


# -- session scope -----------------------------------------------------------------


@pytest.mark.parametrize("asking", ["Alice", "alice", "ALICE"])
def test_a_session_grant_covers_its_agent_in_any_case(asking: str) -> None:
    made = grant("session")

    assert covering([made], agent=asking) is made


def test_a_session_grant_does_not_cover_another_agent() -> None:
    assert covering([grant("session")], agent="Bob") is None


def test_a_session_grant_does_not_cover_the_same_agent_in_another_chat() -> None:
    assert covering([grant("session")], chat_id="c2") is None


def test_a_session_grant_for_another_tool_is_bound_to_its_agent_and_chat_too() -> None:
    made = grant("session", "deploy", {"path": "a.txt"})

    assert covering([made], "deploy", {"path": "b.txt"}, agent="alice") is made
    assert covering([made], "deploy", {"path": "b.txt"}, agent="Bob") is None
    assert covering([made], "deploy", {"path": "b.txt"}, chat_id="c2") is None


# -- always scope -----------------------------------------------------------------


def test_an_always_grant_covers_every_agent_in_every_chat() -> None:
    made = grant("always", agent="Alice", chat_id="c1")

    assert covering([made], agent="Bob", chat_id="c9") is made
    assert covering([made], agent="alice", chat_id="c1") is made


def test_an_always_grant_covers_no_more_commands_than_a_session_grant() -> None:
    made = grant("always")

    assert covering([made], arguments={"command": "ls && rm -rf ~"}, agent="Bob") is None
    assert covering([made], arguments={"command": "ls > out.txt"}, agent="Bob") is None
    assert covering([made], arguments={"command": "$(printf ls)"}, agent="Bob") is None


# -- other tools ------------------------------------------------------------------


def test_a_grant_for_another_tool_covers_any_arguments_of_that_tool() -> None:
    made = grant("always", "deploy", {"path": "a.txt", "content": "x"})

    assert covering([made], "deploy", {"path": "/elsewhere/b.txt", "content": "y"}) is made
    assert covering([made], "deploy", {}) is made


@pytest.mark.parametrize(
    ("granted", "called"),
    [("deploy", "read_file"), ("deploy", SHELL), (SHELL, "deploy"), ("fs__read", "fs__write")],
)
def test_a_grant_never_covers_a_different_tool(granted: str, called: str) -> None:
    made = grant("always", granted, {"command": "ls"})

    assert covering([made], called, {"command": "ls"}) is None


def test_a_tool_name_must_match_exactly() -> None:
    made = grant("always", "deploy", {"path": "a.txt"})

    assert covering([made], "Deploy", {"path": "a.txt"}) is None


# -- finding among several ----------------------------------------------------------


def test_no_grants_cover_nothing() -> None:
    assert covering([]) is None


def test_the_first_covering_grant_is_returned() -> None:
    other_tool = grant("always", "deploy", {"path": "a.txt"})
    other_chat = grant("session", chat_id="c2")
    first = grant("session")
    second = grant("always")

    assert covering([other_tool, other_chat, first, second]) is first
    assert covering([other_tool, other_chat, second, first]) is second


def test_the_covering_grant_can_be_one_of_several_for_the_same_tool() -> None:
    only_git = grant("always", arguments={"command": "git status"})
    only_ls = grant("always", arguments={"command": "ls"})

    assert covering([only_git, only_ls], arguments={"command": "ls src"}) is only_ls
    # Each grant is judged alone: two grants together do not cover a compound line.
    assert covering([only_git, only_ls], arguments={"command": "git log && ls"}) is None


def test_a_grant_loaded_without_a_command_list_never_covers_a_shell_call() -> None:
    incomplete = Grant(grant_id="grant_x", world="w", scope="always", tool_name=SHELL, roots=None)

    assert covering([incomplete], arguments={"command": "ls"}) is None

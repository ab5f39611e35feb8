"""Numeric settings are checked where the World and Agent models are (CLI and API alike).

``--approval-timeout inf`` used to be stored, and every later ``agentworld approvals`` of the
world crashed computing the deadline. Non-finite, non-positive and absurdly long timeouts are
now one line on stderr, a non-zero exit and nothing stored (SPEC §3).
"""

from __future__ import annotations

from typing import Any

import pytest

BAD_TIMEOUTS = ["inf", "-inf", "nan", "-1", "0", "1e400", "1e15"]


def assert_one_line_error(result: Any, *words: str) -> None:
    assert result.code != 0
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ")
    for word in words:
        assert word in lines[0]


@pytest.mark.parametrize("value", BAD_TIMEOUTS)
def test_world_create_refuses_an_unusable_approval_timeout_and_stores_nothing(
    cli: Any, value: str
) -> None:
    result = cli("world", "create", "w", f"--approval-timeout={value}", check=False)
    assert_one_line_error(result, "--approval-timeout")
    assert cli("world", "list", "--json").json() == {"worlds": []}


@pytest.mark.parametrize("value", ["inf", "nan", "0"])
def test_world_update_refuses_an_unusable_approval_timeout_and_keeps_the_old_one(
    cli: Any, value: str
) -> None:
    cli("world", "create", "w", "--approval-timeout", "60")
    result = cli("world", "update", "w", f"--approval-timeout={value}", check=False)
    assert_one_line_error(result, "--approval-timeout")
    assert cli("world", "show", "w", "--json").json()["approvalTimeout"] == 60.0


def test_the_longest_approval_timeout_is_accepted_and_approvals_can_be_listed(cli: Any) -> None:
    cli("world", "create", "w", "--approval-timeout", "31536000")
    assert cli("world", "show", "w", "--json").json()["approvalTimeout"] == 31536000.0
    assert cli("approvals", "w", "--json").json() == {"approvals": []}


@pytest.mark.parametrize("value", ["nan", "inf", "-0.5"])
def test_agent_temperature_must_be_a_finite_number_from_0_to_2(cli: Any, value: str) -> None:
    cli("world", "create", "w")
    result = cli("agent", "create", "w", "a", "--provider", "scripted", "--model", "echo",
                 f"--temperature={value}", check=False)  # fmt: skip
    assert_one_line_error(result, "temperature")
    assert cli("agent", "list", "w", "--json").json() == {"agents": []}


@pytest.mark.parametrize(
    ("option", "value"),
    [("--turn-limit", "0"), ("--max-iterations", "-3")],
)
def test_world_counts_must_be_positive(cli: Any, option: str, value: str) -> None:
    result = cli("world", "create", "w", f"{option}={value}", check=False)
    assert_one_line_error(result)
    assert cli("world", "list", "--json").json() == {"worlds": []}


def test_agent_max_tokens_must_be_positive(cli: Any) -> None:
    cli("world", "create", "w")
    result = cli("agent", "create", "w", "a", "--provider", "scripted", "--model", "echo",
                 "--max-tokens", "0", check=False)  # fmt: skip
    assert_one_line_error(result, "--max-tokens must be ≥ 1")


@pytest.mark.parametrize("name", ["*_file", "read*file"])
def test_legacy_tool_settings_refuse_a_misplaced_wildcard(cli: Any, name: str) -> None:
    result = cli("world", "create", "w", "--excluded-tool", name, check=False)
    assert_one_line_error(result, "only allowed at the end")
    assert cli("world", "list", "--json").json() == {"worlds": []}


def test_excluded_tool_star_denies_every_tool(cli: Any) -> None:
    cli("world", "create", "w", "--excluded-tool", "*")
    rules = cli("policy", "list", "w", "--json").json()
    excluded = [r for r in rules["rules"] if r["source"] == "excluded tools"]
    assert [(r["toolName"], r["decision"]) for r in excluded] == [("*", "DENY")]

"""Names (SPEC R1, R2): one alphabet and one case rule for worlds, agents and senders."""

from __future__ import annotations

import pytest

from agentworld.models.domain import (
    agent_name_problem,
    base_url_problem,
    name_problem,
    sender_problem,
)


@pytest.mark.parametrize("name", ["a", "A1", "planner_2", "x-y", "_hidden", "a" * 64])
def test_valid_names(name: str) -> None:
    assert name_problem(name) is None


@pytest.mark.parametrize("name", ["", "-a", "a b", "a\n", "a\nb", "é", "a.b", "a" * 65, "@a"])
def test_invalid_names_including_a_trailing_newline(name: str) -> None:
    assert name_problem(name) is not None


@pytest.mark.parametrize("name", ["human", "Human", "USER", "you", "System", "world", "WORLD"])
def test_reserved_sender_names_cannot_be_agents_in_any_case(name: str) -> None:
    assert "reserved" in (agent_name_problem(name) or "")


def test_names_near_the_reserved_ones_are_fine() -> None:
    assert agent_name_problem("humans") is None
    assert agent_name_problem("world2") is None


@pytest.mark.parametrize("sender", ["human", "user", "You", "world", "system", "alice", "ops-bot"])
def test_senders_that_are_allowed(sender: str) -> None:
    assert sender_problem(sender, ["planner", "Coder"]) is None


@pytest.mark.parametrize(
    ("sender", "problem"),
    [
        ("planner", "names an agent"),
        ("CODER", "names an agent"),
        ("human\nplanner", "one line"),
        ("bob\r", "one line"),
        ("two words", "use 1-64 letters"),
        ("", "use 1-64 letters"),
    ],
)
def test_senders_that_are_refused(sender: str, problem: str) -> None:
    assert problem in (sender_problem(sender, ["planner", "Coder"]) or "")


@pytest.mark.parametrize("url", ["http://localhost:11434/v1", "https://api.example.com", "http://127.0.0.1:8080"])
def test_good_base_urls(url: str) -> None:
    assert base_url_problem(url) is None


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("notaurl", "http:// or https://"),
        ("ftp://host", "http:// or https://"),
        ("http://", "http:// or https://"),
        ("http://host:99999", "invalid port"),
        ("http://host /v1", "whitespace"),
        (" http://host", "whitespace"),
        ("http://[::1", "host is malformed"),
        ("http://[zz]/v1", "host is malformed"),
        ("http://bot:[REDACTED:url_password]@host/v1", "mask shown in place of a password"),
    ],
)
def test_bad_base_urls(url: str, problem: str) -> None:
    assert problem in (base_url_problem(url) or "")

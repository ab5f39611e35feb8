"""How a world file's rules are planned against the world's own (``world_apply.plan_rules``)."""

from __future__ import annotations

from typing import Any

import pytest

from agentworld.errors import InvalidInputError
from agentworld.world_apply import plan_rules

A: dict[str, Any] = {"name": "a", "toolName": "read_file", "decision": "deny", "priority": 1}
B: dict[str, Any] = {"name": "b", "toolName": "list_files", "decision": "deny", "priority": 1}
LOOSE: dict[str, Any] = {"toolName": "shell_cmd", "decision": "deny", "priority": 1}


def _shown(changes: list[Any]) -> list[tuple[str, str, list[str]]]:
    return [(c.action, c.name, c.fields) for c in changes]


def test_the_same_rules_make_no_change_and_moved_ones_change_position() -> None:
    assert plan_rules([A, LOOSE, B], [A, LOOSE, B], prune=False) == ([], [], [A, LOOSE, B])
    changes, kept, rules = plan_rules([A, B], [B, A], prune=False)
    assert _shown(changes) == [("update", "b", ["position"]), ("update", "a", ["position"])]
    assert (kept, rules) == ([], [B, A])


def test_a_named_rule_is_updated_and_an_unnamed_one_replaced_only_with_prune() -> None:
    raised = {**A, "priority": 7}
    changed = {**LOOSE, "priority": 7}
    changes, kept, rules = plan_rules([A, LOOSE], [raised, changed], prune=False)
    assert _shown(changes) == [("update", "a", ["priority"]), ("create", "#2 deny shell_cmd", ["decision", "priority", "toolName"])]
    assert kept == ["#2 deny shell_cmd"] and rules == [raised, changed, LOOSE]
    changes, kept, rules = plan_rules([A, LOOSE], [raised, changed], prune=True)
    assert _shown(changes)[-1] == ("delete", "#2 deny shell_cmd", [])
    assert (kept, rules) == ([], [raised, changed])


def test_two_rules_of_one_name_are_refused() -> None:
    with pytest.raises(InvalidInputError, match="two rules are named 'A'"):
        plan_rules([], [A, {**A, "name": "A", "priority": 2}], prune=False)

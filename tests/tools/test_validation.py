"""Argument checks before a tool runs (SPEC O2): valid JSON, an object, the tool's schema — and
each failure one short sentence the model can act on."""

from __future__ import annotations

from typing import Any

import pytest

from agentworld.tools.validation import ArgumentError, parse_arguments, validate_arguments

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {"type": "string"},
        "count": {"type": "integer", "minimum": 1},
        "tags": {"type": "array", "items": {"type": "string"}},
        "options": {
            "type": "object",
            "properties": {"depth": {"type": "integer"}},
        },
        "mode": {"enum": ["read", "write"]},
    },
    "required": ["path"],
    "additionalProperties": False,
}


def problem(arguments: dict[str, Any], schema: dict[str, Any] = SCHEMA) -> str:
    with pytest.raises(ArgumentError) as caught:
        validate_arguments(arguments, schema)
    return str(caught.value)


# -- parse_arguments -------------------------------------------------------------


@pytest.mark.parametrize("raw", [None, ""])
def test_missing_arguments_mean_no_arguments(raw: str | None) -> None:
    assert parse_arguments(raw) == {}


def test_a_json_object_is_returned_as_a_dict() -> None:
    raw = '{"path": "a.txt", "count": 2, "tags": ["x"], "options": {"depth": null}}'

    assert parse_arguments(raw) == {
        "path": "a.txt",
        "count": 2,
        "tags": ["x"],
        "options": {"depth": None},
    }


@pytest.mark.parametrize("raw", ['{"path": ', "{path: 'a'}", "not json at all", '{"a": 1} trailing'])
def test_text_that_is_not_json_is_refused_with_the_parser_reason(raw: str) -> None:
    with pytest.raises(ArgumentError, match=r"^arguments are not valid JSON \(.+\)$"):
        parse_arguments(raw)


@pytest.mark.parametrize("raw", ["[]", '["a.txt"]', '"a.txt"', "3", "true", "null"])
def test_json_that_is_not_an_object_is_refused(raw: str) -> None:
    with pytest.raises(ArgumentError, match=r"^arguments must be a JSON object$"):
        parse_arguments(raw)


def test_an_argument_error_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="JSON object"):
        parse_arguments("[]")


# -- validate_arguments ----------------------------------------------------------


@pytest.mark.parametrize(
    "arguments",
    [
        {"path": "a.txt"},
        {"path": "a.txt", "count": 3, "tags": [], "options": {"depth": 2}, "mode": "read"},
    ],
)
def test_arguments_that_fit_the_schema_pass(arguments: dict[str, Any]) -> None:
    assert validate_arguments(arguments, SCHEMA) is None


def test_a_wrong_type_names_the_argument_and_the_expected_type() -> None:
    assert problem({"path": 3}) == "arguments.path: 3 is not of type 'string'"


def test_a_missing_required_argument_is_named() -> None:
    assert problem({}) == "arguments: 'path' is a required property"


def test_an_unexpected_argument_is_named() -> None:
    assert problem({"path": "a", "colour": "red"}) == (
        "arguments: Additional properties are not allowed ('colour' was unexpected)"
    )


def test_a_problem_inside_a_nested_object_gives_the_dotted_path() -> None:
    assert problem({"path": "a", "options": {"depth": "deep"}}) == (
        "arguments.options.depth: 'deep' is not of type 'integer'"
    )


def test_a_problem_inside_a_list_gives_the_item_index() -> None:
    assert problem({"path": "a", "tags": ["ok", 7]}) == "arguments.tags.1: 7 is not of type 'string'"


def test_value_constraints_are_checked_not_only_types() -> None:
    assert problem({"path": "a", "count": 0}) == "arguments.count: 0 is less than the minimum of 1"
    assert problem({"path": "a", "mode": "delete"}).startswith("arguments.mode: 'delete' is not one of")


def test_several_problems_report_the_first_by_path_and_count_the_rest() -> None:
    message = problem({"path": 1, "count": "many", "tags": [2]})

    assert message == "arguments.count: 'many' is not of type 'integer' (and 2 more problems)"


def test_a_missing_argument_comes_before_problems_inside_arguments() -> None:
    assert problem({"count": "many"}) == (
        "arguments: 'path' is a required property (and 1 more problem)"
    )


def test_the_same_schema_in_another_key_order_gives_the_same_verdict() -> None:
    reordered = dict(reversed(list(SCHEMA.items())))

    assert problem({"path": 3}, reordered) == problem({"path": 3})
    validate_arguments({"path": "a"}, reordered)


def test_an_empty_schema_accepts_any_object() -> None:
    validate_arguments({"anything": [1, {"x": None}]}, {})


@pytest.mark.parametrize(
    "broken",
    [
        {"type": "no-such-type"},
        {"type": 5},
        {"properties": 3},
        {"$ref": "#/definitions/missing"},
    ],
)
def test_a_broken_schema_from_a_server_is_left_to_the_tool(broken: dict[str, Any]) -> None:
    validate_arguments({"path": "a"}, broken)

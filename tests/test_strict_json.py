"""``strict_json``: what a model writes is read as JSON proper, and what goes out is always JSON
proper, whatever an older version stored."""

from __future__ import annotations

import json
import math

import pytest

from agentworld import strict_json


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('{"t": NaN}', "NaN is not a JSON number"),
        ('[Infinity]', "Infinity is not a JSON number"),
        ('{"a": {"b": [-Infinity]}}', "-Infinity is not a JSON number"),
        ('{"t": 1e400}', "the number 1e400 is too large"),
        ('{"t": -2.5e308}', "the number -2.5e308 is too large"),
    ],
)
def test_non_finite_numbers_are_not_json(text: str, problem: str) -> None:
    with pytest.raises(strict_json.NotStrictJSON, match=problem):
        strict_json.loads(text)
    json.loads(text)  # which Python's own reader takes


def test_finite_numbers_and_big_integers_are_read_as_json_reads_them() -> None:
    text = '{"a": 1.5e308, "b": -0.0, "c": 123456789012345678901234567890, "d": [1e-400, "NaN"]}'
    assert strict_json.loads(text) == json.loads(text)


def test_what_goes_out_spells_a_stored_non_finite_number_as_a_string() -> None:
    stored = {"t": float("nan"), "l": [float("inf"), -math.inf, 2.0], "s": "NaN", "n": None}

    text = strict_json.dumps(stored, sort_keys=True)

    assert json.loads(text, parse_constant=lambda w: pytest.fail(w)) == {
        "l": ["Infinity", "-Infinity", 2.0], "n": None, "s": "NaN", "t": "NaN",
    }
    assert strict_json.dumps({"a": [1.0, "x"]}, indent=2) == json.dumps({"a": [1.0, "x"]}, indent=2)

"""Argument checks before a tool runs (SPEC O2): valid JSON, an object, and the tool's schema.

JSON means strict JSON: ``NaN``, ``Infinity`` and numbers too large for a float are refused
here, where a model's arguments enter, so none is ever stored in an approval, the audit log
or a tool log (``agentworld.strict_json``).

Each failure is a short sentence the model can act on ("arguments.path: 3 is not of
type 'string'"); validators are compiled once per schema.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from agentworld import strict_json

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator


class ArgumentError(ValueError):
    """The model's arguments cannot be used; the message is shown to the model."""


def parse_arguments(raw: str | None) -> dict[str, Any]:
    """The model's argument text as a JSON object, or ``ArgumentError`` saying what is wrong."""
    try:
        value = strict_json.loads(raw or "{}")
    except RecursionError:
        raise ArgumentError("arguments are nested too deeply") from None
    except ValueError as exc:
        raise ArgumentError(f"arguments are not valid JSON ({exc})") from None
    if not isinstance(value, dict):
        raise ArgumentError("arguments must be a JSON object")
    return value


@lru_cache(maxsize=512)
def _validator(schema_text: str) -> Draft202012Validator:
    from jsonschema import Draft202012Validator  # imported on first use: a slow import

    schema = json.loads(schema_text)
    Draft202012Validator.check_schema(schema)  # SchemaError for a schema that is not one
    return Draft202012Validator(schema)


def validate_arguments(arguments: dict[str, Any], schema: dict[str, Any]) -> None:
    try:
        validator = _validator(json.dumps(schema, sort_keys=True))
        errors = sorted(validator.iter_errors(arguments), key=lambda e: list(e.absolute_path))
    except Exception:
        # A schema the validator cannot use (not a schema, or a $ref that points nowhere) is
        # the server's problem, not the model's: the call goes on and the tool itself will
        # complain. Letting it escape would fail every turn that calls the tool.
        return
    if errors:
        first = errors[0]
        where = ".".join(str(p) for p in first.absolute_path)
        extra = len(errors) - 1
        more = f" (and {extra} more problem{'s' if extra > 1 else ''})" if extra else ""
        raise ArgumentError(f"arguments{'.' + where if where else ''}: {first.message}{more}")

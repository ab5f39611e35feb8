"""What a model call costs: prices per million tokens, the model names they apply to, and the
arithmetic (SPEC O2). Pure: the table shipped with the package is read by
``providers.prices``; an agent's ``priceIn``/``priceOut`` override it.

A cost is USD as a float, or None when it is unknown (a model the table does not know and the
agent does not price): unknown is never counted as 0.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Final

_PER_TOKENS: Final = Decimal(1_000_000)
_STAMP = re.compile(r"\d[\d-]*|latest|preview(-.*)?|exp(-.*)?")
"""What may follow a table name and ``-`` in a model name: a dated snapshot or version
(``2024-08-06``, ``20250514``, ``001``), ``latest``, ``preview…`` or ``exp…``."""


@dataclass(frozen=True)
class Price:
    """USD per million tokens."""

    input: float
    output: float


@dataclass(frozen=True)
class PriceTable:
    """Prices by model name, with the day they were taken and where from."""

    as_of: str
    sources: tuple[str, ...]
    prices: Mapping[str, Price]


def parse_price_table(data: Mapping[str, Any]) -> PriceTable:
    """A table from its TOML document (``providers/prices.toml``); ValueError when malformed."""
    models = data.get("models")
    if not isinstance(data.get("as_of"), str) or not isinstance(models, dict):
        raise ValueError("a price table needs as_of and a [models] table")
    prices: dict[str, Price] = {}
    for name, entry in models.items():
        inp, out = (entry.get("input"), entry.get("output")) if isinstance(entry, dict) else (None, None)
        if not (isinstance(inp, int | float) and isinstance(out, int | float)) or not (
            _is_price(inp) and _is_price(out)
        ):
            raise ValueError(f"price of {name!r}: give input and output, numbers ≥ 0")
        prices[name] = Price(float(inp), float(out))
    return PriceTable(str(data["as_of"]), tuple(data.get("sources", ())), prices)


def _is_price(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value >= 0


def table_price(table: PriceTable, model: str | None) -> Price | None:
    """The table's price of ``model``: its entry, or the longest entry it is a dated snapshot
    or version of (``gpt-4o-2024-08-06`` → ``gpt-4o``); None for a model it does not know."""
    if not model:
        return None
    name = model.removeprefix("models/")  # Google's resource names
    if (found := table.prices.get(name)) is not None:
        return found
    stamped = [
        entry
        for entry in table.prices
        if name.startswith(entry + "-") and _STAMP.fullmatch(name[len(entry) + 1 :])
    ]
    return table.prices[max(stamped, key=len)] if stamped else None


def agent_price(
    table: PriceTable, model: str | None, *, price_in: float | None, price_out: float | None
) -> Price | None:
    """An agent's price: its own ``priceIn``/``priceOut`` where set, the table's for the rest;
    None when either side stays unknown."""
    listed = table_price(table, model)
    inp = price_in if price_in is not None else (listed.input if listed else None)
    out = price_out if price_out is not None else (listed.output if listed else None)
    return None if inp is None or out is None else Price(inp, out)


def call_cost(price: Price | None, input_tokens: int, output_tokens: int) -> float | None:
    """USD for one call's tokens at ``price``, computed in decimal (``1000`` tokens at $2.50
    per million is exactly 0.0025); None when the price is unknown."""
    if price is None:
        return None
    total = Decimal(input_tokens) * Decimal(str(price.input)) + Decimal(output_tokens) * Decimal(
        str(price.output)
    )
    return float(total / _PER_TOKENS)


def format_usd(value: float | None) -> str:
    """A cost as people read it: ``$1.25`` from a dollar up, ``$0.0123`` below (two to four
    decimals), ``<$0.0001`` for less than that but not nothing, ``unknown`` for None."""
    if value is None:
        return "unknown"
    if value >= 1:
        return f"${value:,.2f}"
    if 0 < value < 0.00005:
        return "<$0.0001"
    text = f"{value:.4f}".rstrip("0")
    whole, _, decimals = text.partition(".")
    return f"${whole}.{decimals.ljust(2, '0')}"

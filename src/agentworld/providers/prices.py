"""The price table shipped with the package (``prices.toml``), read once per process; the
arithmetic lives in ``models.pricing``. Nothing is fetched: prices are those of the day the
table states."""

from __future__ import annotations

import functools
import tomllib
from importlib import resources

from agentworld.models.pricing import Price, PriceTable, agent_price, parse_price_table


@functools.cache
def shipped_prices() -> PriceTable:
    """The table of ``providers/prices.toml`` (a broken shipped file is a bug of this package)."""
    text = resources.files("agentworld.providers").joinpath("prices.toml").read_text(encoding="utf-8")
    return parse_price_table(tomllib.loads(text))


def price_of(model: str | None, *, price_in: float | None = None, price_out: float | None = None) -> Price | None:
    """A model's price as an agent pays it: its overrides, else the shipped table's."""
    return agent_price(shipped_prices(), model, price_in=price_in, price_out=price_out)

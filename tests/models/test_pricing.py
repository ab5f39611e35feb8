"""The cost of a model call from the shipped price table (SPEC O2): exact arithmetic, model
names matched exactly or as a dated snapshot, an agent's own prices, unknown models unknown."""

from __future__ import annotations

import pytest

from agentworld.models.pricing import (
    Price,
    PriceTable,
    agent_price,
    call_cost,
    format_usd,
    parse_price_table,
    table_price,
)
from agentworld.providers.prices import price_of, shipped_prices


def test_the_shipped_table_says_when_its_prices_are_from_and_where() -> None:
    table = shipped_prices()
    assert table.as_of == "2025-10-15"
    assert any("openai.com" in s for s in table.sources)
    assert {"gpt-4o", "claude-sonnet-4-5", "gemini-2.5-pro"} <= set(table.prices)


@pytest.mark.parametrize(
    ("model", "tokens", "cost"),
    [
        ("gpt-4o", (1000, 500), 0.0075),  # $2.50 / $10.00 per million
        ("gpt-4o-mini", (1_000_000, 1_000_000), 0.75),  # $0.15 / $0.60
        ("claude-sonnet-4-5", (12_345, 678), 0.047205),  # $3 / $15
        ("gemini-2.0-flash-lite", (3, 7), 0.000002325),  # $0.075 / $0.30
        ("gpt-4o", (0, 0), 0.0),
    ],
)
def test_a_calls_cost_is_its_tokens_at_the_tables_price_exactly(
    model: str, tokens: tuple[int, int], cost: float
) -> None:
    assert call_cost(price_of(model), *tokens) == cost


@pytest.mark.parametrize(
    ("model", "entry"),
    [
        ("gpt-4o-2024-08-06", "gpt-4o"),
        ("gpt-4o-mini-2024-07-18", "gpt-4o-mini"),  # the longest entry, not gpt-4o
        ("claude-sonnet-4-20250514", "claude-sonnet-4"),
        ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5"),
        ("claude-3-5-sonnet-latest", "claude-3-5-sonnet"),
        ("gemini-2.0-flash-001", "gemini-2.0-flash"),
        ("gemini-2.5-flash-preview-05-20", "gemini-2.5-flash"),
        ("models/gemini-2.5-pro", "gemini-2.5-pro"),
    ],
)
def test_a_dated_snapshot_is_priced_as_its_model(model: str, entry: str) -> None:
    assert table_price(shipped_prices(), model) == shipped_prices().prices[entry]


@pytest.mark.parametrize(
    "model", ["echo", "file:replies.json", "llama3.1:8b", "gpt-4o-audio-preview", "my-azure-deployment", "", None]
)
def test_a_model_the_table_does_not_know_has_no_price(model: str | None) -> None:
    assert price_of(model) is None
    assert call_cost(price_of(model), 1000, 1000) is None


def test_an_agents_prices_replace_the_tables_side_by_side() -> None:
    table = PriceTable("2025-01-01", (), {"m": Price(1.0, 2.0)})
    assert agent_price(table, "m", price_in=None, price_out=None) == Price(1.0, 2.0)
    assert agent_price(table, "m", price_in=0.5, price_out=None) == Price(0.5, 2.0)
    assert agent_price(table, "other", price_in=3.0, price_out=4.0) == Price(3.0, 4.0)
    assert agent_price(table, "other", price_in=3.0, price_out=None) is None  # half a price is none


def test_a_malformed_table_is_refused() -> None:
    with pytest.raises(ValueError, match="'m'"):
        parse_price_table({"as_of": "2025-01-01", "models": {"m": {"input": 1}}})
    with pytest.raises(ValueError, match="as_of"):
        parse_price_table({"models": {}})


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (None, "unknown"),
        (0.0, "$0.00"),
        (0.01, "$0.01"),
        (0.012, "$0.012"),
        (0.0035, "$0.0035"),
        (0.00123456, "$0.0012"),
        (0.00001, "<$0.0001"),
        (1.5, "$1.50"),
        (1234.567, "$1,234.57"),
    ],
)
def test_costs_are_shown_with_two_to_four_decimals(value: float | None, shown: str) -> None:
    assert format_usd(value) == shown


def test_a_later_opus_snapshot_is_not_read_as_opus_4() -> None:
    table = shipped_prices()
    assert table_price(table, "claude-opus-4-5-20251101") == Price(input=5.0, output=25.0)
    assert table_price(table, "claude-opus-4-20250514") == Price(input=15.0, output=75.0)

"""Callbacks that embedders may write sync or async (hooks, stream callbacks, bus handlers)."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable
from typing import TypeVar, cast

T = TypeVar("T")


async def maybe_await(result: Awaitable[T] | T) -> T:
    """A callback's result, awaited when the callback was async."""
    if inspect.isawaitable(result):
        return await result
    return cast(T, result)

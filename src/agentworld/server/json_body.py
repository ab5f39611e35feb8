"""Request bodies read as JSON that says one thing.

``json.loads`` takes an object that names a key twice (``{"decision": "deny", "decision":
"approve"}``) and keeps the last value; other readers keep the first, or refuse. A body that
different readers read differently is not one we can read with certainty, so it is refused
(422, naming the key) before any route sees it: what a person sent is what is done. So is a
body holding ``NaN``, ``Infinity`` or a number too large for a float, which Python reads and no
JSON reader does (``strict_json``): nothing a client posts can store one."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import HTTPException, Request, Response
from fastapi.routing import APIRoute


def _one_value_per_key(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found = dict(pairs)
    if len(found) != len(pairs):
        seen: set[str] = set()
        twice = next(key for key, _ in pairs if key in seen or seen.add(key))  # type: ignore[func-returns-value]
        raise HTTPException(
            422, f"body: the key {twice[:60]!r} appears twice in one object (which one counts?)"
        )
    return found


def _finite(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise HTTPException(422, f"body: the number {text[:60]} is too large for JSON")
    return number


def _no_constant(word: str) -> Any:
    raise HTTPException(422, f"body: {word} is not a JSON number")


class _Body(Request):
    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            self._json = json.loads(
                await self.body(),
                object_pairs_hook=_one_value_per_key,
                parse_constant=_no_constant,
                parse_float=_finite,
            )
        return self._json


class OneValuePerKeyRoute(APIRoute):
    """The route class of every API router: its JSON body is read by :class:`_Body`."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def read_strictly(request: Request) -> Response:
            return await handler(_Body(request.scope, request.receive))

        return read_strictly

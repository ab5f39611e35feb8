"""Request bodies read as JSON that says one thing.

``json.loads`` takes an object that names a key twice (``{"decision": "deny", "decision":
"approve"}``) and keeps the last value; other readers keep the first, or refuse. A body that
different readers read differently is not one we can read with certainty, so it is refused
(422, naming the key) before any route sees it: what a person sent is what is done."""

from __future__ import annotations

import json
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


class _Body(Request):
    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            self._json = json.loads(await self.body(), object_pairs_hook=_one_value_per_key)
        return self._json


class OneValuePerKeyRoute(APIRoute):
    """The route class of every API router: its JSON body is read by :class:`_Body`."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def read_strictly(request: Request) -> Response:
            return await handler(_Body(request.scope, request.receive))

        return read_strictly

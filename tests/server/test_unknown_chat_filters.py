"""A chat filter that names no chat of the world is a 404, as on the command line: an empty
list would say "this chat ran no tools" about a chat that does not exist (docs/cli.md: an
unknown chat id is an error in every command that takes one)."""

from __future__ import annotations

import httpx


def test_tool_logs_and_pending_calls_refuse_an_unknown_chat(api: httpx.Client, world_name: str) -> None:
    api.post("/api/worlds", json={"name": world_name})
    chat = api.post(f"/api/worlds/{world_name}/chats", json={}).json()["chatId"]
    for route in ("tool-logs", "pending-calls"):
        known = api.get(f"/api/worlds/{world_name}/{route}", params={"chat": chat})
        assert known.status_code == 200
        unknown = api.get(f"/api/worlds/{world_name}/{route}", params={"chat": "chat_nope"})
        assert unknown.status_code == 404
        assert unknown.json()["error"]["code"] == "not_found"
        assert "chat_nope" in unknown.json()["error"]["message"]

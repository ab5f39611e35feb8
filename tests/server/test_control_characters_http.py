"""The HTTP API keeps a chat's name and its Markdown export free of terminal control
characters, as the CLI does: before, ``PATCH .../chats/{c}`` stored a name with ESC and BEL in
it, and ``GET .../export`` — a file people ``cat`` — carried a message's ESC/BEL raw."""

from __future__ import annotations

import httpx
from http_harness import make_world

from agentworld.testing.openai_wire import OpenAIWireServer


def test_a_chat_name_with_control_characters_is_refused(
    api: httpx.Client, llm: OpenAIWireServer, world_name: str
) -> None:
    chat = make_world(api, world_name, llm)

    refused = api.patch(f"/api/worlds/{world_name}/chats/{chat}", json={"name": "N\x1b[31mRED\x07"})

    assert refused.status_code == 400
    assert refused.json()["error"]["code"] == "invalid_input"
    assert "control characters" in refused.json()["error"]["message"]
    assert api.get(f"/api/worlds/{world_name}/chats/{chat}").json()["name"] == "New chat"


def test_the_markdown_export_escapes_control_characters(
    api: httpx.Client, llm: OpenAIWireServer, world_name: str
) -> None:
    chat = make_world(api, world_name, llm)  # no agents: messages are only stored
    text = "hi \x1b]0;pwned\x07\x1b[31mred\r\nnext\tline \x9b2J \u202eevil"
    assert (
        api.post(f"/api/worlds/{world_name}/chats/{chat}/messages", json={"text": text}).status_code
        == 202
    )

    exported = api.get(f"/api/worlds/{world_name}/chats/{chat}/export").text

    assert not [c for c in "\x1b\x07\r\x9b\u202e" if c in exported], repr(exported)
    assert "hi \\e]0;pwned\\u0007\\e[31mred\nnext\tline \\u009b2J \\u202eevil" in exported
    stored = api.get(f"/api/worlds/{world_name}/chats/{chat}/messages").json()["messages"]
    assert stored[0]["content"] == text  # the JSON keeps what was said

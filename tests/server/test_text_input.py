"""Text that is not text: a JSON body may spell a lone surrogate (``"\\ud800"``), which UTF-8
cannot encode. The server refuses it before anything is stored, naming the field; and data a
database already holds of that kind (written before, or by another interface) is still listed
and streamed, so such a world never cuts its event stream off."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
from http_harness import Served, SSEClient, make_world, refusal

from agentworld.models.events import CrudEvent
from agentworld.storage.event_log import EventLog
from agentworld.storage.sql import SQLStorage
from agentworld.testing.openai_wire import OpenAIWireServer

LONE = "\ud800"


def send(api: httpx.Client, method: str, url: str, body: dict[str, Any]) -> httpx.Response:
    """``body`` as JSON with ASCII escapes (``"\\ud800"``), as any client may write it: httpx's
    own ``json=`` cannot encode a lone surrogate."""
    return api.request(method, url, content=json.dumps(body), headers={"content-type": "application/json"})


def log_after(served: Served, world: str, after: int = 0) -> list[dict[str, Any]]:
    """The world's stored events, read from the database the server writes."""

    async def read() -> list[dict[str, Any]]:
        async with SQLStorage(served.db_url) as storage:
            return [e.document for e in (await EventLog(storage).after(world, after)).events]

    return asyncio.run(read())


def test_a_lone_surrogate_in_world_settings_is_refused_naming_the_field_and_nothing_is_saved(
    served: Served, api: httpx.Client, world_name: str
) -> None:
    assert api.post("/api/worlds", json={"name": world_name, "description": "kept"}).status_code == 201
    before = api.get(f"/api/worlds/{world_name}").json()
    logged = len(log_after(served, world_name))

    status, code, message = refusal(send(api, "PATCH", f"/api/worlds/{world_name}", {"description": LONE}))
    assert (status, code) == (422, "validation_error")
    assert message.startswith("description: ") and "lone surrogate" in message
    # Deep inside a setting, and in a key: the place is named.
    nested = {"mcpConfig": {"mcpServers": {"gh": {"command": "true", "env": {f"K{LONE}": "v"}}}}}
    status, _, message = refusal(send(api, "PATCH", f"/api/worlds/{world_name}", nested))
    assert status == 422 and message.startswith("mcpConfig: ") and "mcpServers.gh.env.K\\ud800" in message
    assert refusal(send(api, "POST", "/api/worlds", {"name": f"{world_name}b", "description": f"x{LONE}"}))[0] == 422

    assert api.get(f"/api/worlds/{world_name}").json() == before
    assert len(log_after(served, world_name)) == logged  # no crud event either
    assert api.get(f"/api/worlds/{world_name}b").status_code == 404
    assert api.get("/api/worlds").status_code == 200


def test_a_lone_surrogate_in_an_agent_or_a_message_is_refused_and_nothing_is_saved(
    served: Served, api: httpx.Client, llm: OpenAIWireServer, world_name: str
) -> None:
    chat = make_world(api, world_name, llm, "a1")
    agent = {"name": "a2", "provider": "scripted", "model": "echo", "systemPrompt": "\udfff"}

    status, code, message = refusal(send(api, "POST", f"/api/worlds/{world_name}/agents", agent))
    assert (status, code) == (422, "validation_error") and message.startswith("systemPrompt: ")
    status, _, message = refusal(
        send(api, "POST", f"/api/worlds/{world_name}/chats/{chat}/messages", {"text": f"hi {LONE}"})
    )
    assert status == 422 and message.startswith("text: ")
    status, _, message = refusal(
        send(api, "PATCH", f"/api/worlds/{world_name}/agents/a1", {"systemPrompt": f"{LONE}!"})
    )
    assert status == 422 and message.startswith("systemPrompt: ")

    assert [a["name"] for a in api.get(f"/api/worlds/{world_name}/agents").json()["agents"]] == ["a1"]
    assert api.get(f"/api/worlds/{world_name}/agents/a1").json()["systemPrompt"] == f"agent:{world_name}/a1"
    assert api.get(f"/api/worlds/{world_name}/chats/{chat}/messages").json()["messages"] == []


@pytest.mark.parametrize(
    "body",
    [b'{"name": "w\xff"}', b'\xff\xfe{"name": "w"}', b"\xc3(", b'{"name": "\xed\xa0\x80"}'],
    ids=["bad byte", "bad byte order mark", "cut sequence", "encoded surrogate"],
)
def test_a_body_that_is_not_utf8_is_refused_as_json_that_does_not_parse(
    api: httpx.Client, body: bytes
) -> None:
    """Bytes no JSON reader can decode are refused like malformed JSON (422), not as a request
    the server could not read (400); nothing is created."""
    sent = api.post("/api/worlds", content=body, headers={"content-type": "application/json"})
    assert refusal(sent)[:2] == (422, "validation_error")
    malformed = api.post("/api/worlds", content=b"{not json", headers={"content-type": "application/json"})
    assert refusal(malformed)[:2] == (422, "validation_error")
    assert api.get("/api/worlds/w").status_code == 404


def test_a_lone_surrogate_stored_earlier_is_listed_and_streamed_escaped_and_the_stream_goes_on(
    served: Served, api: httpx.Client, world_name: str
) -> None:
    """A database written before the check (or by the Python API) holds one: every listing
    answers, and the event stream sends that event and every later one, also on resume."""
    assert api.post("/api/worlds", json={"name": world_name}).status_code == 201

    async def poison() -> None:
        async with SQLStorage(served.db_url) as storage:
            world = await storage.get_world(world_name)
            await storage.update_world(world.model_copy(update={"description": f"bad {LONE}"}))
            await EventLog(storage).append(
                [CrudEvent(world=world_name, operation="update", entity="world", name=world_name,
                           data={"description": f"bad {LONE}"})]
            )

    asyncio.run(poison())
    poisoned = log_after(served, world_name)[-1]

    assert api.get(f"/api/worlds/{world_name}").json()["description"] == f"bad {LONE}"
    assert api.get("/api/worlds").status_code == 200
    url = f"{served.base_url}/api/worlds/{world_name}/events"
    with SSEClient(f"{url}?after=0") as stream:
        bad = stream.wait_for(lambda f: f.data.get("eventId") == poisoned["eventId"])
        assert bad.data["data"] == {"description": f"bad {LONE}"}
        assert api.patch(f"/api/worlds/{world_name}", json={"description": "mended"}).status_code == 200
        stream.wait_for(lambda f: f.data.get("data") == {"description": "mended"})
    with SSEClient(url, headers={"Last-Event-ID": str(bad.id - 1)}) as resumed:
        resumed.wait_for(lambda f: f.data.get("data") == {"description": "mended"})
    assert [f.id for f in resumed.frames][0] == bad.id


def test_a_nul_in_a_message_is_refused_naming_the_field_and_nothing_is_saved(
    served: Served, api: httpx.Client, llm: OpenAIWireServer, world_name: str
) -> None:
    """PostgreSQL's text cannot hold a NUL and SQLite's can: refused on either, like a lone
    surrogate, so a message never depends on the backend."""
    chat = make_world(api, world_name, llm, "a1")
    url = f"/api/worlds/{world_name}/chats/{chat}/messages"

    status, code, message = refusal(send(api, "POST", url, {"text": "@a1 hi\u0000there"}))

    assert (status, code) == (422, "validation_error")
    assert message.startswith("text: ") and "NUL" in message
    assert api.get(url).json()["messages"] == []
    assert api.post(url, json={"text": "@a1 hi"}).status_code == 202

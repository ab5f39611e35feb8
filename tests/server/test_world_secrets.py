"""A world's secrets over HTTP: its ``mcpConfig`` is shown masked, and a client that sends the
settings back as it read them (change one field, PATCH the document) keeps the secrets it
never saw. A mask that stands for no stored secret is refused rather than stored as a value."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import httpx
from http_harness import Served, refusal

from agentworld.storage.event_log import EventLog
from agentworld.storage.sql import SQLStorage

TOKEN = "ghp_REALabcdefghijklmnopqrstuvwxyz0123456789"
CONFIG: dict[str, Any] = {
    "mcpServers": {
        "gh": {
            "command": "true",
            "args": ["--token", "abcdef123456", "-v"],
            "env": {"GITHUB_TOKEN": TOKEN, "PORT": "8080"},
        },
        "web": {
            "url": "http://bot:hunter2pass@127.0.0.1:9/mcp",
            "headers": {"Authorization": "Bearer s3cr3t-value-xyz", "X-Trace": "1"},
        },
    }
}


def stored_config(served: Served, world: str) -> Any:
    """The world's MCP configuration as the database holds it (the API never shows it)."""

    async def read() -> Any:
        async with SQLStorage(served.db_url) as storage:
            return (await storage.get_world(world)).mcp_config

    return asyncio.run(read())


def test_settings_sent_back_as_shown_keep_the_stored_secrets(
    served: Served, api: httpx.Client, world_name: str
) -> None:
    created = api.post("/api/worlds", json={"name": world_name, "mcpConfig": CONFIG})
    assert created.status_code == 201
    shown = api.get(f"/api/worlds/{world_name}").json()
    assert shown["mcpConfig"]["mcpServers"]["gh"]["env"]["GITHUB_TOKEN"] == "[REDACTED:token]"
    assert "hunter2pass" not in str(shown) and TOKEN not in str(shown)

    changed = api.patch(
        f"/api/worlds/{world_name}",
        json={"mcpConfig": shown["mcpConfig"], "description": "new description"},
    )

    assert changed.status_code == 200
    assert changed.json()["mcpConfig"] == shown["mcpConfig"]  # still masked in the answer
    assert stored_config(served, world_name) == CONFIG
    # A secret sent in full replaces the stored one; the masks beside it still keep theirs.
    edited = copy.deepcopy(shown["mcpConfig"])
    edited["mcpServers"]["gh"]["env"]["GITHUB_TOKEN"] = "ghp_NEWabcdefghijklmnopqrstuvwxyz0123456789"
    assert api.patch(f"/api/worlds/{world_name}", json={"mcpConfig": edited}).status_code == 200
    expected = copy.deepcopy(CONFIG)
    expected["mcpServers"]["gh"]["env"]["GITHUB_TOKEN"] = "ghp_NEWabcdefghijklmnopqrstuvwxyz0123456789"
    assert stored_config(served, world_name) == expected


def test_a_mask_that_stands_for_no_stored_secret_is_refused(
    served: Served, api: httpx.Client, world_name: str
) -> None:
    masked = {"mcpServers": {"gh": {"command": "true", "env": {"GITHUB_TOKEN": "[REDACTED:token]"}}}}
    status, code, message = refusal(api.post("/api/worlds", json={"name": world_name, "mcpConfig": masked}))
    assert (status, code) == (422, "validation_error")
    assert message.startswith("mcpConfig.mcpServers.gh.env.GITHUB_TOKEN: ")
    assert api.get(f"/api/worlds/{world_name}").status_code == 404

    assert api.post("/api/worlds", json={"name": world_name, "mcpConfig": CONFIG}).status_code == 201
    shown = api.get(f"/api/worlds/{world_name}").json()["mcpConfig"]
    for place, value in (
        (("gh", "env", "OTHER_TOKEN"), "[REDACTED:token]"),  # nothing stored there
        (("web", "headers", "Authorization"), "Bearer [REDACTED:authorization]"),  # not as shown
    ):
        sent = copy.deepcopy(shown)
        server, group, key = place
        sent["mcpServers"][server][group][key] = value
        status, _, message = refusal(api.patch(f"/api/worlds/{world_name}", json={"mcpConfig": sent}))
        assert status == 422 and message.startswith(f"mcpConfig.mcpServers.{server}.{group}.{key}: ")
    assert stored_config(served, world_name) == CONFIG


def test_the_crud_event_announcing_a_change_shows_it_as_the_document_does(
    served: Served, api: httpx.Client, world_name: str
) -> None:
    """The event log keeps the ``crud`` event and every stream sends it: its ``data`` is the
    changed settings as the world and agent documents show them (camelCase, secrets masked),
    never the values given."""
    assert api.post("/api/worlds", json={"name": world_name}).status_code == 201
    assert api.patch(f"/api/worlds/{world_name}", json={"mcpConfig": CONFIG, "turnLimit": 3}).status_code == 200
    agent = {"name": "a1", "provider": "scripted", "model": "echo"}
    assert api.post(f"/api/worlds/{world_name}/agents", json=agent).status_code == 201
    assert api.patch(f"/api/worlds/{world_name}/agents/a1", json={"systemPrompt": "be brief"}).status_code == 200
    shown = api.get(f"/api/worlds/{world_name}").json()

    async def updates() -> list[dict[str, Any]]:
        async with SQLStorage(served.db_url) as storage:
            events = (await EventLog(storage).after(world_name, 0)).events
        return [e.document for e in events if e.document.get("operation") == "update"]

    logged = asyncio.run(updates())

    assert [e["data"] for e in logged] == [
        {"mcpConfig": shown["mcpConfig"], "turnLimit": 3},
        {"systemPrompt": "be brief"},
    ]
    assert TOKEN not in str(logged) and "hunter2pass" not in str(logged) and "s3cr3t" not in str(logged)


# -- an agent's endpoint ---------------------------------------------------------------------

PASSWORD_URL = "http://bot:hunter2pass@127.0.0.1:9/v1"
SHOWN_URL = "http://bot:[REDACTED:url_password]@127.0.0.1:9/v1"


def stored_base_url(served: Served, world: str, agent: str) -> str | None:
    async def read() -> str | None:
        async with SQLStorage(served.db_url) as storage:
            return (await storage.get_agent(world, agent)).base_url

    return asyncio.run(read())


def test_a_password_in_an_agents_base_url_is_shown_masked_and_kept_when_sent_back(
    served: Served, api: httpx.Client, world_name: str
) -> None:
    assert api.post("/api/worlds", json={"name": world_name}).status_code == 201
    agents = f"/api/worlds/{world_name}/agents"
    created = api.post(agents, json={"name": "a1", "provider": "openai", "model": "m", "baseUrl": PASSWORD_URL})
    assert created.status_code == 201, created.text
    shown = [created.json(), api.get(f"{agents}/a1").json(), *api.get(agents).json()["agents"]]
    assert [doc["baseUrl"] for doc in shown] == [SHOWN_URL] * 3
    assert "hunter2pass" not in str(shown)

    # Read, change one field, send it all back: the password stays as stored.
    doc = shown[1]
    changed = api.patch(f"{agents}/a1", json={"baseUrl": doc["baseUrl"], "model": "m2"})
    assert changed.status_code == 200, changed.text
    assert (changed.json()["baseUrl"], changed.json()["model"]) == (SHOWN_URL, "m2")
    assert stored_base_url(served, world_name, "a1") == PASSWORD_URL

    # The mask on another host (or on a new agent) stands for no password: refused, nothing stored.
    moved = SHOWN_URL.replace("127.0.0.1:9", "127.0.0.1:10")
    status, code, message = refusal(api.patch(f"{agents}/a1", json={"baseUrl": moved}))
    assert (status, code) == (422, "validation_error") and "baseUrl" in message
    assert stored_base_url(served, world_name, "a1") == PASSWORD_URL
    fresh = api.post(agents, json={"name": "a2", "provider": "openai", "model": "m", "baseUrl": SHOWN_URL})
    assert refusal(fresh)[:2] == (422, "validation_error")
    assert api.get(f"{agents}/a2").status_code == 404

    # A new password, sent in full, replaces the stored one.
    new_url = PASSWORD_URL.replace("hunter2pass", "n3wpass")
    assert api.patch(f"{agents}/a1", json={"baseUrl": new_url}).json()["baseUrl"] == SHOWN_URL
    assert stored_base_url(served, world_name, "a1") == new_url

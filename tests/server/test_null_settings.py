"""``null`` in a settings body: it clears a setting that may be empty (an agent's
``temperature``, a world's ``mainAgent``), and for any other setting it is a value of the wrong
JSON type, refused 422 like ``"turnLimit": true`` -- never stored, never half applied -- and
the published schema offers ``null`` exactly where it is taken."""

from __future__ import annotations

import httpx
import pytest
from http_harness import refusal


@pytest.mark.parametrize(
    "field", ["turnLimit", "maxIterations", "approvalTimeout", "streaming", "description", "policyMode", "hooks"]
)
def test_null_for_a_world_setting_that_cannot_be_empty_is_refused_and_nothing_changes(
    api: httpx.Client, world_name: str, field: str
) -> None:
    assert api.post("/api/worlds", json={"name": world_name, "description": "kept"}).status_code == 201
    before = api.get(f"/api/worlds/{world_name}").json()

    status, code, message = refusal(api.patch(f"/api/worlds/{world_name}", json={"turnLimit": 3, field: None}))
    assert (status, code) == (422, "validation_error")
    assert message.startswith(f"{field}: null is not a value here")
    assert api.get(f"/api/worlds/{world_name}").json() == before  # turnLimit: 3 was not applied either
    refused = api.post("/api/worlds", json={"name": f"{world_name}b", field: None})
    assert refusal(refused)[:2] == (422, "validation_error")
    assert api.get(f"/api/worlds/{world_name}b").status_code == 404


def test_null_clears_the_settings_that_may_be_empty(api: httpx.Client, world_name: str) -> None:
    assert api.post("/api/worlds", json={"name": world_name, "workingDir": "/tmp"}).status_code == 201
    agent = {"name": "a1", "provider": "scripted", "model": "echo", "temperature": 0.5, "maxTokens": 9}
    assert api.post(f"/api/worlds/{world_name}/agents", json=agent).status_code == 201
    assert api.patch(f"/api/worlds/{world_name}", json={"mainAgent": "a1"}).json()["mainAgent"] == "a1"

    world = api.patch(f"/api/worlds/{world_name}", json={"mainAgent": None, "workingDir": None})
    assert world.status_code == 200
    assert (world.json()["mainAgent"], world.json()["workingDir"]) == (None, None)
    cleared = api.patch(f"/api/worlds/{world_name}/agents/a1", json={"temperature": None, "maxTokens": None})
    assert cleared.status_code == 200
    assert (cleared.json()["temperature"], cleared.json()["maxTokens"]) == (None, None)

    for field in ("model", "provider", "systemPrompt", "memoryWindow"):
        status, code, message = refusal(api.patch(f"/api/worlds/{world_name}/agents/a1", json={field: None}))
        assert (status, code) == (422, "validation_error") and message.startswith(f"{field}: ")
    chat = api.post(f"/api/worlds/{world_name}/chats").json()["chatId"]
    for field in ("name", "current"):
        refused = api.patch(f"/api/worlds/{world_name}/chats/{chat}", json={field: None})
        assert refusal(refused)[:2] == (422, "validation_error")
    assert api.get(f"/api/worlds/{world_name}/agents/a1").json()["model"] == "echo"


def test_the_schema_offers_null_only_where_it_is_taken(api: httpx.Client) -> None:
    schemas = api.get("/openapi.json").json()["components"]["schemas"]

    def nullable(schema: str, field: str) -> bool:
        found = schemas[schema]["properties"][field]
        return {"type": "null"} in found.get("anyOf", [])

    assert not nullable("WorldSettings", "turnLimit") and not nullable("WorldSettings", "streaming")
    assert nullable("WorldSettings", "mainAgent") and nullable("WorldSettings", "mcpConfig")
    assert not nullable("AgentSettings", "model") and nullable("AgentSettings", "temperature")
    assert not nullable("ChatChange", "name")

"""A world's containment settings over HTTP (SPEC C1): ``sandbox`` and ``network`` are set by
POST and PATCH, kept in the world document, and a value outside their sets is refused 422
with nothing stored."""

from __future__ import annotations

import httpx
from http_harness import refusal


def test_sandbox_and_network_are_set_changed_and_shown(api: httpx.Client, world_name: str) -> None:
    created = api.post("/api/worlds", json={"name": world_name})
    assert created.status_code == 201
    assert (created.json()["sandbox"], created.json()["network"]) == ("auto", "deny")

    changed = api.patch(f"/api/worlds/{world_name}", json={"sandbox": "on", "network": "allow"})
    assert changed.status_code == 200
    shown = api.get(f"/api/worlds/{world_name}").json()
    assert (shown["sandbox"], shown["network"]) == ("on", "allow")

    other = api.post("/api/worlds", json={"name": f"{world_name}b", "sandbox": "off"})
    assert (other.status_code, other.json()["sandbox"]) == (201, "off")


def test_a_value_outside_the_settings_is_refused_and_nothing_changes(
    api: httpx.Client, world_name: str
) -> None:
    assert api.post("/api/worlds", json={"name": world_name, "sandbox": "on"}).status_code == 201
    for body in ({"sandbox": "maybe"}, {"network": "some"}, {"sandbox": None}, {"sandbox": True}):
        status, code, message = refusal(api.patch(f"/api/worlds/{world_name}", json=body))
        assert (status, code) == (422, "validation_error")
        assert message.startswith(next(iter(body)))
    assert api.get(f"/api/worlds/{world_name}").json()["sandbox"] == "on"
    refused = api.post("/api/worlds", json={"name": f"{world_name}b", "network": "open"})
    assert refusal(refused)[:2] == (422, "validation_error")
    assert api.get(f"/api/worlds/{world_name}b").status_code == 404

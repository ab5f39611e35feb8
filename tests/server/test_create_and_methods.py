"""Two refusals the real server makes as the rest of the API does: a new world's ``mainAgent``
is checked as ``PATCH`` checks it (a new world has no agents, so no name is one of them), and a
method a route does not take is answered 405 with the ``Allow`` header RFC 9110 requires."""

from __future__ import annotations

import httpx
from http_harness import refusal


def test_a_new_world_cannot_name_a_main_agent_it_does_not_have(
    api: httpx.Client, world_name: str
) -> None:
    created = api.post("/api/worlds", json={"name": world_name, "mainAgent": "ghost"})
    status, code, message = refusal(created)
    assert (status, code) == (400, "invalid_input")
    assert message.startswith(f"mainAgent: world {world_name!r} has no agent 'ghost'")
    assert api.get(f"/api/worlds/{world_name}").status_code == 404  # nothing was created

    # PATCH refuses it the same way; once the agent exists, both take it.
    assert api.post("/api/worlds", json={"name": world_name, "mainAgent": ""}).status_code == 201
    patched = api.patch(f"/api/worlds/{world_name}", json={"mainAgent": "ghost"})
    assert refusal(patched)[:2] == (400, "invalid_input")
    body = {"name": "Ghost", "provider": "scripted", "model": "echo"}
    assert api.post(f"/api/worlds/{world_name}/agents", json=body).status_code == 201
    assert (
        api.patch(f"/api/worlds/{world_name}", json={"mainAgent": "ghost"}).json()["mainAgent"]
        == "Ghost"
    )


def test_a_method_a_route_does_not_take_is_refused_with_the_methods_it_takes(
    api: httpx.Client, world_name: str
) -> None:
    assert api.post("/api/worlds", json={"name": world_name}).status_code == 201
    put = api.put(f"/api/worlds/{world_name}", json={})
    assert refusal(put)[:2] == (405, "method_not_allowed")
    assert {m.strip() for m in put.headers["Allow"].split(",")} == {"GET", "PATCH", "DELETE"}

    listing = api.delete("/api/worlds")
    assert refusal(listing)[:2] == (405, "method_not_allowed")
    assert {m.strip() for m in listing.headers["Allow"].split(",")} == {"GET", "POST"}

    posted = api.post("/health")
    assert refusal(posted)[:2] == (405, "method_not_allowed")
    assert {m.strip() for m in posted.headers["Allow"].split(",")} == {"GET", "HEAD"}


def test_health_answers_head_as_uptime_checkers_send_it(api: httpx.Client) -> None:
    head = api.head("/health")
    assert head.status_code == 200 and head.content == b""
    assert head.headers["content-type"].startswith("application/json")

"""A body value of the wrong JSON type is refused (422), never converted: ``"turnLimit": true``
is not 1, ``"streaming": "no"`` is not false, ``"approvalTimeout": "30"`` is not 30 seconds
(docs/api.md: "422 validation_error: the body does not match the schema"). A client that
sends such a body has a bug, and storing a guess at what it meant hides it."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

BAD_WORLD_VALUES = [
    ("turnLimit", True),
    ("turnLimit", "5"),
    ("turnLimit", 5.0),
    ("maxIterations", "3"),
    ("streaming", "no"),
    ("streaming", 0),
    ("nonInteractive", "true"),
    ("approvalTimeout", "30"),
    ("approvalTimeout", False),
    ("description", 7),
    ("allowedTools", "read_file"),
]


@pytest.mark.parametrize(("field", "value"), BAD_WORLD_VALUES)
def test_a_world_setting_of_the_wrong_type_is_refused_and_nothing_is_stored(
    api: httpx.Client, world_name: str, field: str, value: Any
) -> None:
    created = api.post("/api/worlds", json={"name": world_name, field: value})
    assert created.status_code == 422, created.text
    assert created.json()["error"]["code"] == "validation_error"
    assert created.json()["error"]["message"].startswith(f"{field}: ")
    assert api.get(f"/api/worlds/{world_name}").status_code == 404

    assert api.post("/api/worlds", json={"name": world_name}).status_code == 201
    before = api.get(f"/api/worlds/{world_name}").json()
    patched = api.patch(f"/api/worlds/{world_name}", json={field: value})
    assert patched.status_code == 422, patched.text
    assert api.get(f"/api/worlds/{world_name}").json() == before


def test_values_of_the_right_type_are_taken_an_integer_for_a_number_too(
    api: httpx.Client, world_name: str
) -> None:
    body = {"name": world_name, "turnLimit": 7, "streaming": False, "approvalTimeout": 30}
    created = api.post("/api/worlds", json=body)
    assert created.status_code == 201, created.text
    doc = created.json()
    assert (doc["turnLimit"], doc["streaming"], doc["approvalTimeout"]) == (7, False, 30.0)


@pytest.mark.parametrize(("field", "value"), [("maxTokens", True), ("temperature", "0.5"), ("model", 3)])
def test_an_agent_setting_of_the_wrong_type_is_refused(
    api: httpx.Client, world_name: str, field: str, value: Any
) -> None:
    assert api.post("/api/worlds", json={"name": world_name}).status_code == 201
    body = {"name": "a1", "provider": "scripted", "model": "echo", field: value}
    created = api.post(f"/api/worlds/{world_name}/agents", json=body)
    assert created.status_code == 422, created.text
    assert created.json()["error"]["message"].startswith(f"{field}: ")
    assert api.get(f"/api/worlds/{world_name}/agents").json()["agents"] == []


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ({"turnLimit": 0}, "turnLimit: "),
        ({"maxIterations": 0}, "maxIterations: "),
        ({"approvalTimeout": -1}, "approvalTimeout: "),
    ],
)
def test_a_setting_out_of_range_is_refused_by_its_json_name(
    api: httpx.Client, world_name: str, body: dict[str, Any], named: str
) -> None:
    refused = api.post("/api/worlds", json={"name": world_name, **body})
    assert refused.status_code == 400, refused.text
    message = refused.json()["error"]["message"]
    assert message.startswith(named) and "_" not in message.split(":")[0]

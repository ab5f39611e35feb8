"""The OpenAPI schema is generated from the code, pinned by a snapshot (a change of the contract
is a visible diff: ``AGENTWORLD_UPDATE_SNAPSHOTS=1`` rewrites it), served, and fuzzed with
schemathesis against the real server: no 5xx, every answer as documented (issue acceptance 6)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import httpx
import pytest
import schemathesis
from http_harness import Served
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from agentworld.server import create_app

SNAPSHOT = Path(__file__).with_name("openapi.snapshot.json")


def generated() -> dict[str, Any]:
    return create_app("sqlite:///unused.db").openapi()


def test_the_openapi_schema_matches_its_snapshot() -> None:
    schema = generated()
    if os.environ.get("AGENTWORLD_UPDATE_SNAPSHOTS") == "1":
        SNAPSHOT.write_text(json.dumps(schema, indent=2, sort_keys=True) + "\n")
    assert schema == json.loads(SNAPSHOT.read_text()), (
        "the HTTP contract changed: review the diff, then AGENTWORLD_UPDATE_SNAPSHOTS=1 pytest "
        "tests/server/test_openapi.py"
    )


def test_the_schema_and_its_docs_are_served(served: Served, api: httpx.Client) -> None:
    assert api.get("/openapi.json").json() == generated()
    docs = api.get("/docs")
    assert docs.status_code == 200 and "swagger" in docs.text.lower()
    paths = generated()["paths"]
    for path in ("/health", "/api/worlds", "/api/worlds/{world}/events",
                 "/api/worlds/{world}/chats/{chat}/messages", "/api/worlds/{world}/approvals/{approval_id}"):
        assert path in paths


@schemathesis.serializer("application/toml")
def _world_file_text(ctx: Any, value: Any) -> bytes:
    """A world file as fuzzed text: a generated string is sent as it is, anything else as
    its text (the server must refuse it as a bad file, never fail)."""
    return str(value).encode("utf-8", "surrogatepass")


OPERATIONS = sorted(
    (method.upper(), path)
    for path, item in generated()["paths"].items()
    for method in item
    if not path.endswith("/events")  # a stream never ends: its own tests follow it
)


@pytest.fixture(scope="module")
def api_schema(served: Served) -> Any:
    with served.client() as api:  # a world to find, so some requests get past the 404s
        api.post("/api/worlds", json={"name": "fuzzed"})
        api.post("/api/worlds/fuzzed/agents", json={"name": "a1", "provider": "scripted", "model": "echo"})
    return schemathesis.openapi.from_dict(generated())


@pytest.mark.parametrize(("method", "path"), OPERATIONS)
def test_fuzzing_the_schema_finds_no_server_error(
    api_schema: Any, served: Served, method: str, path: str
) -> None:
    operation = api_schema[path][method]

    @given(case=operation.as_strategy())
    @settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck),
              derandomize=True, database=None)
    def call(case: Any) -> None:
        case.call_and_validate(
            base_url=served.base_url,
            checks=[not_a_server_error, status_code_conformance, content_type_conformance,
                    response_schema_conformance],
            timeout=30,
        )

    call()

"""Positions clients give — ``?after=`` of a transcript page or the event stream, and
``Last-Event-ID`` — against the real server: out of range is a 4xx with the error document,
never a 500; and the stream refuses to resume beyond the world's last event, where every event
up to that number would be skipped without a word."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from http_harness import Served, SSEClient, make_world

from agentworld.testing.openai_wire import OpenAIWireServer

TOO_BIG = str(2**63)  # one past what the databases hold


def refusal(answer: httpx.Response) -> tuple[int, str]:
    body = answer.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message"}, body
    return answer.status_code, body["error"]["code"]


def stream_refusal(api: httpx.Client, url: str, **request: Any) -> tuple[int, str]:
    """What opening the event stream answers: the refusal's status and code, or (200, "opened")
    for a stream that opened (it would never end, so it is not read)."""
    with api.stream("GET", url, **request) as answer:
        if answer.status_code == 200:
            return 200, "opened"
        answer.read()
        return refusal(answer)


@pytest.mark.parametrize("after", [TOO_BIG, "1" + "0" * 22])
def test_a_transcript_position_out_of_range_is_a_validation_error(
    api: httpx.Client, llm: OpenAIWireServer, world_name: str, after: str
) -> None:
    chat = make_world(api, world_name, llm)
    url = f"/api/worlds/{world_name}/chats/{chat}/messages"

    assert refusal(api.get(url, params={"after": after})) == (422, "validation_error")
    assert api.get(url, params={"after": str(2**63 - 1)}).json()["messages"] == []


@pytest.mark.parametrize(
    "headers, params",
    [
        ({}, {"after": TOO_BIG}),
        ({"Last-Event-ID": "1" + "0" * 22}, {}),
        ({"Last-Event-ID": b"\xb2"}, {}),  # '²' in latin-1: a digit to str.isdigit, not to int
    ],
)
def test_a_stream_position_that_is_no_position_is_refused(
    api: httpx.Client, world_name: str, headers: dict[str, str | bytes], params: dict[str, str]
) -> None:
    assert api.post("/api/worlds", json={"name": world_name}).status_code == 201

    status, code = stream_refusal(api, f"/api/worlds/{world_name}/events", headers=headers, params=params)

    assert (status, code) in ((422, "validation_error"), (400, "bad_request"))


def test_resuming_beyond_the_last_event_is_refused_and_at_the_last_event_loses_nothing(
    served: Served, api: httpx.Client, llm: OpenAIWireServer, world_name: str
) -> None:
    chat = make_world(api, world_name, llm)
    head = api.get(f"/api/worlds/{world_name}/chats/{chat}/messages").json()["lastEventId"]
    url = f"{served.base_url}/api/worlds/{world_name}/events"

    for beyond in (head + 1, 100_000):
        assert stream_refusal(api, url, headers={"Last-Event-ID": str(beyond)}) == (400, "bad_request")
        assert stream_refusal(api, url, params={"after": str(beyond)}) == (400, "bad_request")
    with SSEClient(url, headers={"Last-Event-ID": str(head)}) as stream:
        assert stream.status == 200
        api.post(f"/api/worlds/{world_name}/chats")  # a new chat: a crud event
        created = stream.wait_for(lambda f: f.event == "crud")
    assert created.id is not None and created.id > head

"""Deleting a world while clients follow its event stream (SPEC §3.1): every live client gets
what was published before the delete, then a ``crud`` event that deletes the world, and then
the server ends the stream. A world created later under the same name is never served on it."""

from __future__ import annotations

import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import httpx
from http_harness import Frame, Served, SSEClient, is_message, server_env

ECHO = {"provider": "scripted", "model": "echo"}


def _crud(frame: Frame, operation: str, entity: str) -> bool:
    return frame.event == "crud" and (frame.data["operation"], frame.data["entity"]) == (
        operation,
        entity,
    )


def _changes_then_delete(api: httpx.Client, world: str, chat: str) -> None:
    """Four changes and the delete, one right after the other: the changes are stored a few
    milliseconds before the delete takes the world's rows with it."""
    assert (
        api.patch(f"/api/worlds/{world}/agents/a1", json={"systemPrompt": "new"}).status_code == 200
    )
    assert api.delete(f"/api/worlds/{world}/agents/a2").status_code == 204
    assert api.delete(f"/api/worlds/{world}/chats/{chat}").status_code == 204
    assert api.patch(f"/api/worlds/{world}", json={"description": "last words"}).status_code == 200
    assert api.delete(f"/api/worlds/{world}").status_code == 204


def _seen_in_order(stream: SSEClient, world: str) -> list[tuple[str, str]]:
    """The crud events of the stream, ending with the world's delete; the stream has ended."""
    last = stream.wait_for(lambda f: _crud(f, "delete", "world"), timeout=5)
    assert last.data["name"] == world and last.data["world"] == world
    assert stream.wait_closed(5), "the stream of a deleted world goes on"
    assert stream.frames[-1] is last
    return [(f.data["operation"], f.data["entity"]) for f in stream.frames if f.event == "crud"]


def _setup(api: httpx.Client, world: str) -> str:
    assert api.post("/api/worlds", json={"name": world}).status_code == 201
    for agent in ("a1", "a2"):
        assert (
            api.post(f"/api/worlds/{world}/agents", json={"name": agent, **ECHO}).status_code == 201
        )
    return str(api.post(f"/api/worlds/{world}/chats").json()["chatId"])


def test_a_world_deleted_while_followed_ends_its_streams_after_what_came_before(
    served: Served, api: httpx.Client, world_name: str
) -> None:
    chat = _setup(api, world_name)
    other = api.post(f"/api/worlds/{world_name}/chats").json()["chatId"]
    url = f"{served.base_url}/api/worlds/{world_name}/events"
    with SSEClient(url) as everything, SSEClient(f"{url}?chat={other}") as one_chat:
        _changes_then_delete(api, world_name, chat)

        assert _seen_in_order(everything, world_name) == [
            ("update", "agent"),
            ("delete", "agent"),
            ("delete", "chat"),
            ("update", "world"),
            ("delete", "world"),
        ]
        # A client of one chat is told too: the world its chat was in is gone.
        assert _seen_in_order(one_chat, world_name) == [("delete", "world")]


def test_a_running_world_deleted_while_followed_ends_its_streams_after_what_came_before(
    served: Served, api: httpx.Client, world_name: str
) -> None:
    chat = _setup(api, world_name)
    with SSEClient(f"{served.base_url}/api/worlds/{world_name}/events") as stream:
        # The world runs in the server now: its events go through the server's own bus.
        api.post(f"/api/worlds/{world_name}/chats/{chat}/messages", json={"text": "@a1 hello"})
        stream.wait_for(is_message("a1", "hello"))
        _changes_then_delete(api, world_name, chat)

        assert _seen_in_order(stream, world_name)[-5:] == [
            ("update", "agent"),
            ("delete", "agent"),
            ("delete", "chat"),
            ("update", "world"),
            ("delete", "world"),
        ]


def _lines_until_the_end(url: str, opened: threading.Event) -> list[str]:
    with (
        httpx.Client(timeout=httpx.Timeout(5, read=10)) as client,
        client.stream("GET", url) as response,
    ):
        opened.set()
        return list(response.iter_lines())


def test_a_world_created_again_under_the_same_name_has_a_stream_of_its_own(
    served: Served, api: httpx.Client, world_name: str
) -> None:
    _setup(api, world_name)
    url = f"{served.base_url}/api/worlds/{world_name}/events"
    with SSEClient(url) as old, ThreadPoolExecutor(1) as pool:
        opened = threading.Event()
        raw = pool.submit(_lines_until_the_end, url, opened)
        assert opened.wait(5)
        assert api.delete(f"/api/worlds/{world_name}").status_code == 204
        old.wait_for(lambda f: _crud(f, "delete", "world"), timeout=5)
        assert old.wait_closed(5)
        # The last lines ask a browser not to reconnect by itself (into the world made next).
        assert "retry: 86400000" in [line for line in raw.result(timeout=10) if line][-2:]

        assert api.post("/api/worlds", json={"name": world_name}).status_code == 201
        with SSEClient(url) as new:
            chat = api.post(f"/api/worlds/{world_name}/chats").json()["chatId"]
            created = new.wait_for(lambda f: _crud(f, "create", "chat"), timeout=5)
            assert created.data["chatId"] == chat
        assert not any(_crud(f, "create", "chat") for f in old.frames)


def test_a_world_deleted_by_another_process_ends_its_streams(
    served: Served, api: httpx.Client, world_name: str
) -> None:
    """The CLI deletes the world the server's clients follow: its log goes with it, so no event
    of the delete is ever stored. The server finds the world gone at its next read of the log,
    tells every follower as if it had deleted the world itself, and ends their streams."""
    chat = _setup(api, world_name)
    url = f"{served.base_url}/api/worlds/{world_name}/events"
    with SSEClient(url) as everything, SSEClient(f"{url}?chat={chat}") as one_chat:
        api.post(f"/api/worlds/{world_name}/chats/{chat}/messages", json={"text": "@a1 hello"})
        everything.wait_for(is_message("a1", "hello"))

        deleted = subprocess.run(
            [sys.executable, "-m", "agentworld", "--db", served.db_url, "world", "delete", world_name],
            env=server_env(served.home), capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert deleted.returncode == 0, deleted.stderr

        for stream in (everything, one_chat):
            last = stream.wait_for(lambda f: _crud(f, "delete", "world"), timeout=10)
            assert (last.data["world"], last.data["name"]) == (world_name, world_name)
            assert stream.wait_closed(5), "the stream of a world deleted elsewhere goes on"
            assert stream.frames[-1] is last
    assert api.get(f"/api/worlds/{world_name}/events").status_code == 404

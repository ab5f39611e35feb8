"""A client that hangs up in the middle of a long replay (``?after=0`` on a world with thousands
of stored events, as a browser reload does): the server stops writing at once, rather than
pushing the rest of the backlog into the dead socket and logging each write it cannot make."""

from __future__ import annotations

import asyncio
import socket
import struct
import time
from pathlib import Path
from urllib.parse import urlsplit

import httpx
from http_harness import Served

from agentworld.models.events import SystemEvent
from agentworld.storage.event_log import EventLog
from agentworld.storage.sql import SQLStorage

BACKLOG = 3000


async def _store_backlog(db_url: str, world: str) -> None:
    """Thousands of events in the world's log in one transaction, as another process would
    store them (through the HTTP API this would take a request each)."""
    async with SQLStorage(db_url) as storage:
        text = "x" * 400  # a frame of ~600 bytes: the backlog is more than a socket buffer
        events = [SystemEvent(world=world, text=f"{n} {text}") for n in range(BACKLOG)]
        await EventLog(storage).append(events)


def _hang_up_during_replay(base_url: str, path: str) -> None:
    """Ask for the whole backlog, read its first few lines, then reset the connection (as a
    closed tab does: the server's next writes fail)."""
    address = urlsplit(base_url)
    with socket.create_connection((address.hostname, address.port), timeout=10) as sock:
        sock.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
        received = b""
        while received.count(b"\n") < 10:
            received += sock.recv(4096)
        assert received.startswith(b"HTTP/1.1 200")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


def _send_failures(log: Path) -> int:
    return log.read_text(errors="replace").count("socket.send() raised exception")


def test_a_client_that_hangs_up_during_a_replay_is_not_written_to_any_more(
    served: Served, api: httpx.Client, world_name: str
) -> None:
    assert api.post("/api/worlds", json={"name": world_name}).status_code == 201
    asyncio.run(_store_backlog(served.db_url, world_name))
    log = served.home / f"serve-{urlsplit(served.base_url).port}.log"
    before = _send_failures(log)

    for _ in range(3):
        _hang_up_during_replay(served.base_url, f"/api/worlds/{world_name}/events?after=0")
    # The server is still well, and what it logged about the dead sockets is counted after it
    # has had time to go through the whole backlog.
    deadline = time.monotonic() + 1.0
    while time.monotonic() < deadline:
        assert api.get("/health").status_code == 200
        time.sleep(0.1)
    assert _send_failures(log) - before == 0, "the server wrote on into a closed connection"

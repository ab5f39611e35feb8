"""A provider that quotes the key it was sent in its error body never gets that key shown,
stored or published.

Black-box: an OpenAI-compatible endpoint answering 401 with ``Incorrect API key provided:
Bearer sk-proj-…`` made ``agentworld send --json`` print the whole key on stderr and in its
system message, and stored it in the ``messages`` table and in the ``events`` table (the
stream's ``error`` event and the ``agent_failed`` system event); the same with Anthropic's
``x-api-key`` and with a key read from ``--api-key-env LLMX``. Here a real loopback server
echoes the header, the real CLI runs in a subprocess, and the SQLite file is read back.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import closing
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

OPENAI_KEY = "sk-proj-SECRETSECRET1234567890abcd"
ODD_KEY = "plainvalue-9f8e7d6c5b4a"
"""A key with no known shape, in a variable whose name says nothing (``LLMX``)."""


class _EchoAuth(BaseHTTPRequestHandler):
    """Answers every POST with 401 and an error that quotes the request's key headers."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", 0)))
        auth = self.headers.get("authorization") or self.headers.get("x-api-key") or ""
        word = auth.split()[-1] if auth else ""
        message = f"Incorrect API key provided: {auth} ; also {word}"
        body = json.dumps(
            {"type": "error", "error": {"message": message, "type": "authentication_error", "code": "invalid_api_key"}}
        ).encode()
        self.send_response(401)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args: Any) -> None:
        pass


@pytest.fixture
def echo_url() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _EchoAuth)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def _stored_rows(db_url: str) -> list[str]:
    with closing(sqlite3.connect(db_url.removeprefix("sqlite:///"))) as db:
        messages = [str(row[0]) for row in db.execute("select content from messages")]
        events = [str(row[0]) for row in db.execute("select cast(payload as text) from events")]
    return messages + events


@pytest.mark.parametrize(
    ("provider", "key_env", "key", "path"),
    [
        ("openai", None, OPENAI_KEY, "/v1"),
        ("anthropic", None, "sk-ant-api03-SECRETSECRET1234567890abcdef", ""),
        ("openai", "LLMX", ODD_KEY, "/v1"),
        ("anthropic", "LLMX", ODD_KEY, ""),
    ],
)
def test_a_key_quoted_in_a_provider_error_is_masked_everywhere(
    cli: Any, db_url: str, tmp_path: Path, echo_url: str, provider: str, key_env: str | None, key: str, path: str
) -> None:
    env_name = key_env or ("OPENAI_API_KEY" if provider == "openai" else "ANTHROPIC_API_KEY")
    env = {env_name: key}
    cli("world", "create", "w", "--working-dir", str(tmp_path))
    agent = ["agent", "create", "w", "a", "--provider", provider, "--model", "m", "--base-url", echo_url + path]
    cli(*agent, *(["--api-key-env", key_env] if key_env else []), env=env)

    sent = cli("send", "w", "@a hi", "--json", check=False, env=env)

    shown = sent.stdout + sent.stderr
    assert "401" in shown and "[REDACTED" in shown  # the failure is reported, the key masked
    assert key not in shown
    stored = _stored_rows(db_url)
    assert any("rejected the API key" in row for row in stored)
    assert not [row for row in stored if key in row]

"""``agentworld serve``: the HTTP API and its event stream (SPEC I3, §3.1) on uvicorn.

Loopback by default. Bound to any other address it needs a token (``--token``,
``AGENTWORLD_TOKEN``, or ``--generate-token``, which prints one with a login URL) and refuses to
start without one, in one line. The server, FastAPI and uvicorn are imported only here.
"""

from __future__ import annotations

import secrets
import sys
from typing import Annotated

import typer

from agentworld.cli import output
from agentworld.cli.common import check_database, state


def serve(
    host: Annotated[str, typer.Option("--host", help="Address to listen on (beyond loopback a token is required).")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="Port to listen on (0: any free port).")] = 8080,
    token: Annotated[str | None, typer.Option("--token", envvar="AGENTWORLD_TOKEN", help="Every request must send Authorization: Bearer TOKEN (at least 16 characters).")] = None,
    generate_token: Annotated[bool, typer.Option("--generate-token", help="Make up a token and print it with a login URL.")] = False,
    allowed_host: Annotated[list[str] | None, typer.Option("--allowed-host", help="A Host header to accept besides localhost and the bound address (repeatable).")] = None,
    cors_origin: Annotated[list[str] | None, typer.Option("--cors-origin", help="An origin browsers may call the API from (repeatable; default none).")] = None,
    max_body: Annotated[int, typer.Option("--max-body", min=1, help="Largest request body, in bytes.")] = 1_048_576,
) -> None:
    """Serve the HTTP API (REST + Server-Sent Events) on this database until interrupted."""
    from agentworld.errors import AgentWorldError
    from agentworld.server import ServerConfig, create_app

    if generate_token and token is None:
        token = secrets.token_urlsafe(24)
    config = ServerConfig(
        host=host,
        port=port,
        token=token,
        allowed_hosts=tuple(allowed_host or ()),
        cors_origins=tuple(cors_origin or ()),
        max_body_bytes=max_body,
    )
    try:
        check_database(state["db"])
        app = create_app(state["db"], config=config)
    except AgentWorldError as exc:
        output.fail(str(exc))
    import uvicorn

    server = uvicorn.Server(
        uvicorn.Config(app, host=host, port=port, log_level="warning", timeout_graceful_shutdown=2)
    )
    if generate_token:
        shown = "localhost" if host in ("0.0.0.0", "::", "127.0.0.1") else host
        sys.stderr.write(f"token: {token}\nlog in from a browser: http://{shown}:{port}/login?token={token}\n")
    sys.stderr.write(f"agentworld serving http://{host}:{port} (API docs at /docs)\n")
    sys.stderr.flush()
    server.run()
    if not server.started:
        output.fail(f"could not listen on {host}:{port}")

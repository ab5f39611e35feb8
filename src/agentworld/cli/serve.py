"""``agentworld serve``: the HTTP API and its event stream (SPEC I3, §3.1) on uvicorn.

Loopback by default. Bound to any other address it needs a token (``--token``,
``AGENTWORLD_TOKEN``, or ``--generate-token``, which prints one with a login URL) and refuses to
start without one, in one line. The server, FastAPI and uvicorn are imported only here.

Everything that can refuse to start — the settings, the address, the database — is tried
before uvicorn takes over, so a refusal is one ``error: …`` line with exit 1 like every other
command's (uvicorn would log a traceback and exit 3), and "serving" is said only once the
socket listens and the database is open.
"""

from __future__ import annotations

import asyncio
import secrets
import socket
import sys
from typing import Annotated

import typer

from agentworld.cli import output
from agentworld.cli.common import (
    check_database,
    name_flags,
    state,
    tune_collector,
    warn_if_no_sandbox_here,
)


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
    import uvicorn

    from agentworld.agent_world import AgentWorld
    from agentworld.errors import AgentWorldError, InvalidInputError
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
        config.check()
        check_database(state["db"])
        sockets = listen(host, port)
    except InvalidInputError as exc:
        output.fail(name_flags(str(exc)))
    except AgentWorldError as exc:
        output.fail(str(exc))
    except OSError as exc:
        output.fail(f"cannot listen on {host}:{port}: {exc.strerror or exc}")
    warn_if_no_sandbox_here()
    # The app is given an AgentWorld opened here, before uvicorn starts it: a database that
    # cannot be opened fails in this command, not in uvicorn's lifespan.
    agent_world = AgentWorld(state["db"], long_lived=True)
    app = create_app(config=config, agent_world=agent_world)
    server = uvicorn.Server(
        uvicorn.Config(app, host=host, port=port, log_level="warning", timeout_graceful_shutdown=2)
    )
    bound = sockets[0].getsockname()[1]  # the real port, also when --port 0 let the system pick
    address = f"[{host}]" if ":" in host else host  # an IPv6 address, as a URL writes it

    async def run_until_stopped() -> None:
        async with agent_world:
            if generate_token:
                shown = "localhost" if host in ("0.0.0.0", "::", "127.0.0.1") else address
                sys.stderr.write(
                    f"token: {token}\nlog in from a browser: http://{shown}:{bound}/login?token={token}\n"
                )
            sys.stderr.write(f"agentworld serving http://{address}:{bound} (API docs at /docs)\n")
            sys.stderr.flush()
            await server.serve(sockets=sockets)

    tune_collector()
    try:
        asyncio.run(run_until_stopped())
    except AgentWorldError as exc:
        output.fail(str(exc))
    finally:
        for sock in sockets:
            sock.close()


def listen(host: str, port: int) -> list[socket.socket]:
    """Listening sockets on every address ``host`` resolves to, as asyncio's ``create_server``
    would bind them (address reuse on, IPv6 sockets IPv6 only). Binding here rather than in
    uvicorn lets a busy port or an unknown host be refused in one line. Raises ``OSError``."""
    bound: list[socket.socket] = []
    try:
        for family, kind, proto, _name, address in socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        ):
            sock = socket.socket(family, kind, proto)
            bound.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            sock.bind(address)
            sock.listen(2048)  # uvicorn's backlog; connections wait here until it accepts them
    except OSError:
        for sock in bound:
            sock.close()
        raise
    return bound

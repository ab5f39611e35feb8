"""The web UI (SPEC I4): one page of plain HTML, CSS and ES modules shipped inside the package
and served by the HTTP server, so ``pip install`` and ``agentworld serve`` are all a user needs
(no Node.js at install or run time).

``mount_ui(app)`` adds ``GET /`` (the page) and the assets under ``/ui/`` to the server's app.
The page talks to the HTTP API of SPEC §3.1 and follows the world's event stream; it never
reads storage or imports the runtime, so this package depends on nothing of ours. How the page
is built: ``docs/ui.md``.
"""

from __future__ import annotations

import os
from pathlib import Path

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.staticfiles import PathLike, StaticFiles
from starlette.types import Scope

__all__ = ["ASSETS_PATH", "STATIC_DIR", "mount_ui"]

STATIC_DIR = Path(__file__).parent / "static"
ASSETS_PATH = "/ui"

# Defence in depth behind the page's own rule (it never turns a string into HTML): no inline
# script or style, nothing loaded from elsewhere, no plugins, no framing.
CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ]
)
_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    # Revalidate each time (the ETag makes that cheap), so an upgraded package shows at once.
    "Cache-Control": "no-cache",
}


class _Assets(StaticFiles):
    """The page's files, with the page's security headers."""

    def file_response(
        self,
        full_path: PathLike,
        stat_result: os.stat_result,
        scope: Scope,
        status_code: int = 200,
    ) -> Response:
        response = super().file_response(full_path, stat_result, scope, status_code)
        response.headers.update(_HEADERS)
        return response


def mount_ui(app: Starlette) -> None:
    """Serve the web UI from ``app``: the page at ``/``, its assets under ``/ui/``. Idempotent,
    and kept out of the OpenAPI schema (the page is not part of the API contract)."""
    if getattr(app.state, "webui_mounted", False):
        return
    app.state.webui_mounted = True

    async def page(_request: Request) -> Response:
        return FileResponse(STATIC_DIR / "index.html", headers=_HEADERS, media_type="text/html")

    app.add_route("/", page, methods=["GET", "HEAD"], include_in_schema=False)
    app.mount(ASSETS_PATH, _Assets(directory=STATIC_DIR), name="webui")

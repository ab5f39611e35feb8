"""``agentworld serve`` with the web UI mounted, for the browser tests: the server's own
``create_app`` plus ``mount_ui`` (a no-op once ``create_app`` mounts the UI itself).

    python tests/webui/serve_ui.py DB_URL PORT
"""

from __future__ import annotations

import sys

import uvicorn

from agentworld.server import create_app
from agentworld.webui import mount_ui


def main() -> None:
    db, port = sys.argv[1], int(sys.argv[2])
    app = create_app(db)
    mount_ui(app)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", timeout_graceful_shutdown=2)


if __name__ == "__main__":
    main()

"""The CLI shows a world's MCP configuration with its secrets masked, as the HTTP API does.

Black-box: ``world create`` (its text and ``--json``), ``world show --json`` and ``world list
--json`` printed ``env`` tokens, bearer headers, ``--token`` arguments and URL passwords in
clear, while the API masked them. Run with the CLI in a subprocess.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SECRETS = ("ghp_abcdefghijklmnopqrstuvwxyz0123456789", "hdr-secret-value-12345678", "argtoken-987654321", "urlpass123")
CONFIG = {
    "mcpServers": {
        "gh": {
            "command": "true",
            "args": ["--token", "argtoken-987654321", "https://bot:urlpass123@git.example/x"],
            "env": {"GITHUB_TOKEN": "ghp_abcdefghijklmnopqrstuvwxyz0123456789"},
        },
        "web": {"url": "https://mcp.example/sse", "headers": {"Authorization": "Bearer hdr-secret-value-12345678"}},
    }
}


def _assert_masked(text: str) -> None:
    assert "[REDACTED" in text
    for secret in SECRETS:
        assert secret not in text, secret


def test_every_world_command_masks_the_mcp_secrets(cli: Any, tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps(CONFIG))

    created = cli("world", "create", "w", "--mcp-config", str(config), "--working-dir", str(tmp_path))
    _assert_masked(created.stdout)
    created_json = cli("world", "create", "v", "--mcp-config", str(config), "--json")
    _assert_masked(created_json.stdout)
    shown = cli("world", "show", "w", "--json")
    _assert_masked(shown.stdout)
    assert shown.json()["mcpConfig"]["mcpServers"]["gh"]["command"] == "true"
    _assert_masked(cli("world", "list", "--json").stdout)
    _assert_masked(cli("world", "show", "w").stdout)

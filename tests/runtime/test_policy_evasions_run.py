"""The black-box evasions, run for real: a world whose policy allows ``sed`` and ``cat`` and
denies ``rm`` and ``~/.ssh``, nobody to ask, a scripted agent, a real shell in a temp dir.

Before the fix, ``sed -n '1e r""m -f victim' file.txt`` ran without a prompt and deleted the
file, and ``cat ~/.s"s"h/key`` printed the key. Both must now be refused without running.
"""

from __future__ import annotations

import json
from pathlib import Path

from agentworld import AgentWorld

POLICY = """
[[rule]]
toolName = "shell_cmd"
argsPattern = '\\.ssh/'
decision = "deny"
priority = 900

[[rule]]
toolName = "shell_cmd"
commandPrefix = ["sed", "cat"]
decision = "allow"
priority = 500

[[rule]]
toolName = "shell_cmd"
commandPrefix = "rm"
decision = "deny"
priority = 600
"""


async def _run(tmp_path: Path, command: str) -> str:
    """The tool result the agent got for ``command`` (an error result when refused)."""
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY)
    script = tmp_path / "script.json"
    call = {"name": "shell_cmd", "arguments": {"command": command}}
    script.write_text(json.dumps([{"content": "", "tool_calls": [call]}, "done"]))
    async with AgentWorld(f"sqlite:///{tmp_path / 'w.db'}") as aw:
        await aw.create_world(
            "w", working_dir=str(tmp_path), policy_files=[str(policy)], non_interactive=True
        )
        await aw.create_agent("w", "a1", provider="scripted", model=f"file:{script}")
        await aw.send("w", "@a1 go", timeout=30)
        memory = await aw.storage.memory("w", "a1", (await aw.current_chat("w")))
    (result,) = [m.content or "" for m in memory if m.role == "tool"]
    return result


async def test_sed_cannot_run_rm_through_its_e_command(tmp_path: Path) -> None:
    (tmp_path / "file.txt").write_text("line\n")
    victim = tmp_path / "victim"
    victim.write_text("keep me")
    # `r""m`: sed hands `r""m -f victim` to sh, which reads it as `rm -f victim`.
    result = await _run(tmp_path, "sed -n '1e r\"\"m -f victim' file.txt")
    assert victim.read_text() == "keep me"
    assert "nobody can be asked" in result or "needs a person" in result


async def test_cat_cannot_read_a_denied_path_spelled_with_quotes(tmp_path: Path) -> None:
    key = tmp_path / ".ssh" / "id_ed25519"
    key.parent.mkdir()
    key.write_text("PRIVATE KEY MATERIAL")
    result = await _run(tmp_path, 'cat ./.s"s"h/id_ed25519')
    assert "PRIVATE KEY MATERIAL" not in result
    assert "denied by policy" in result

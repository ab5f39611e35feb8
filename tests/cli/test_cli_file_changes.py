"""An agent changes a file through the CLI (SPEC F1): the approval shows the diff, approving
writes exactly that, a file changed since it was shown is not written, a path that escapes is
refused before anyone is asked, and a policy may allow writes under a directory. Every command
is a separate `agentworld` process; the model is the scripted provider reading a script file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

TYPO = "".join(f"line {n}\n" for n in range(1, 5)) + "Agent World is teh runtime.\n" + "".join(
    f"line {n}\n" for n in range(6, 10)
)

pytestmark = pytest.mark.both_engines_wide  # on Temporal too in the wide run (tests/conftest.py)
FIXED = TYPO.replace("teh runtime", "the runtime")
TYPO_DIFF = (
    "--- a/README.txt\n"
    "+++ b/README.txt\n"
    "@@ -2,7 +2,7 @@\n"
    " line 2\n"
    " line 3\n"
    " line 4\n"
    "-Agent World is teh runtime.\n"
    "+Agent World is the runtime.\n"
    " line 6\n"
    " line 7\n"
    " line 8\n"
)


def scripted_agent(cli: Any, tmp_path: Path, *calls: dict[str, Any], policy: Path | None = None) -> Path:
    """World ``w`` working in ``tmp_path/work`` and agent ``a1`` whose model makes ``calls``
    (one reply) and then says it is done; the working directory is returned."""
    work = tmp_path / "work"
    work.mkdir()
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"tool_calls": list(calls)}, "done"]))
    cli("world", "create", "w", "--working-dir", str(work), *(["--policy", str(policy)] if policy else []))
    cli("agent", "create", "w", "a1", "--provider", "scripted", "--model", f"file:{script}")
    return work


def fix_typo() -> dict[str, Any]:
    return {"name": "edit_file", "arguments": {"path": "README.txt", "old": "teh runtime", "new": "the runtime"}}


@pytest.mark.both_backends
def test_fixing_a_typo_shows_exactly_that_change_and_approving_writes_exactly_that(
    cli: Any, tmp_path: Path
) -> None:
    work = scripted_agent(cli, tmp_path, fix_typo())
    (work / "README.txt").write_text(TYPO)

    sent = cli("send", "w", "@a1 fix the typo in README.txt", "--json").json()

    (approval,) = sent["pendingApprovals"]
    assert approval["toolName"] == "edit_file" and approval["diff"] == TYPO_DIFF
    assert (work / "README.txt").read_text() == TYPO  # nothing written before the answer
    assert cli("approvals", "w", "--json").json() == {"approvals": [approval]}
    shown = cli("approvals", "w").stdout
    assert "  file:         README.txt\n  change:\n" in shown
    assert "    -Agent World is teh runtime.\n    +Agent World is the runtime.\n" in shown
    assert "\x1b" not in shown  # not a terminal: no colour

    done = cli("approve", "w", approval["approvalId"], "--decision", "approve", "--json").json()

    assert (work / "README.txt").read_text() == FIXED
    assert done["messages"][-1]["content"] == "done"
    memory = cli("messages", "w", "--agent", "a1", "--json").json()["messages"]
    calls = [c for m in memory for c in m.get("tool_calls") or [] if c["function"]["name"] == "edit_file"]
    assert [json.loads(c["function"]["arguments"]) for c in calls] == [fix_typo()["arguments"]]
    (result,) = [m for m in memory if m["role"] == "tool" and m.get("tool_call_id") == calls[0]["id"]]
    assert json.loads(result["content"]) == {"path": "README.txt", "created": False, "changed": "+1 -1 lines"}
    (request,) = [e for e in cli("audit", "w", "--json").json()["audit"] if e["event"] == "request"]
    assert request["detail"]["diff"] == TYPO_DIFF
    assert request["detail"]["file"]["path"] == str(work / "README.txt")
    assert len(request["detail"]["file"]["sha256"]) == 64


def test_a_file_changed_after_it_was_shown_is_not_written_and_the_model_is_told(cli: Any, tmp_path: Path) -> None:
    work = scripted_agent(cli, tmp_path, fix_typo())
    (work / "README.txt").write_text(TYPO)
    (approval,) = cli("send", "w", "@a1 fix the typo", "--json").json()["pendingApprovals"]
    changed = TYPO + "a line someone added meanwhile\n"
    (work / "README.txt").write_text(changed)

    cli("approve", "w", approval["approvalId"], "--decision", "approve")

    assert (work / "README.txt").read_text() == changed
    memory = cli("messages", "w", "--agent", "a1", "--json").json()["messages"]
    results = [m["content"] for m in memory if m["role"] == "tool" and "edit_file" in m["content"]]
    assert results == [json.dumps({"error": "edit_file failed: the file changed since it was shown; nothing written"})]


def test_a_new_file_is_shown_against_empty_and_created(cli: Any, tmp_path: Path) -> None:
    call = {"name": "write_file", "arguments": {"path": "docs/notes.md", "content": "# Notes\n\nfirst\n"}}
    work = scripted_agent(cli, tmp_path, call)
    (approval,) = cli("send", "w", "@a1 start the notes", "--json").json()["pendingApprovals"]
    assert approval["diff"] == "--- /dev/null\n+++ b/docs/notes.md\n@@ -0,0 +1,3 @@\n+# Notes\n+\n+first\n"
    cli("approve", "w", approval["approvalId"], "--decision", "approve")
    assert (work / "docs" / "notes.md").read_text() == "# Notes\n\nfirst\n"


@pytest.mark.parametrize("path", ["../outside.txt", "escape/outside.txt", "ABSOLUTE"])
def test_a_path_that_escapes_is_refused_before_anyone_is_asked(cli: Any, tmp_path: Path, path: str) -> None:
    outside = tmp_path / "outside.txt"
    path = str(outside) if path == "ABSOLUTE" else path
    work = scripted_agent(cli, tmp_path, {"name": "write_file", "arguments": {"path": path, "content": "pwned\n"}})
    outside.write_text("mine\n")
    (work / "escape").symlink_to(tmp_path)

    sent = cli("send", "w", "@a1 write it", "--json").json()

    assert sent["pendingApprovals"] == [] and cli("approvals", "w", "--json").json() == {"approvals": []}
    assert outside.read_text() == "mine\n"
    assert not any(e["event"] == "request" for e in cli("audit", "w", "--json").json()["audit"])
    memory = cli("messages", "w", "--agent", "a1", "--json").json()["messages"]
    (refused,) = [m["content"] for m in memory if m["role"] == "tool"]
    assert "outside the working directory" in refused


def test_a_path_prefix_rule_allows_writes_under_a_directory_only(cli: Any, tmp_path: Path) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text(
        '[[rule]]\nname = "docs may change"\ntoolName = ["write_file", "edit_file"]\n'
        'pathPrefix = "docs"\ndecision = "allow"\npriority = 100\n'
    )
    work = scripted_agent(
        cli,
        tmp_path,
        {"name": "write_file", "arguments": {"path": "docs/a.md", "content": "a\n"}},
        {"name": "write_file", "arguments": {"path": "docs/../b.md", "content": "b\n"}},
        policy=policy,
    )
    sent = cli("send", "w", "@a1 write both", "--json").json()

    assert (work / "docs" / "a.md").read_text() == "a\n"
    (asked,) = sent["pendingApprovals"]
    assert asked["toolArgs"]["path"] == "docs/../b.md" and not (work / "b.md").exists()
    decided = cli("policy", "test", "w", "--tool", "edit_file", "--args",
                  json.dumps({"path": "docs/x.md", "old": "a", "new": "b"}), "--json").json()  # fmt: skip
    assert (decided["decision"], decided["rule"]["name"], decided["rule"]["pathPrefix"]) == ("ALLOW", "docs may change", ["docs"])


def test_the_diff_is_coloured_on_a_terminal(cli: Any, tmp_path: Path, db_url: str) -> None:
    work = scripted_agent(cli, tmp_path, fix_typo())
    (work / "README.txt").write_text(TYPO)
    cli("send", "w", "@a1 fix the typo")
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "AGENTWORLD_DB")}
    env.update(HOME=str(tmp_path), TERM="xterm-256color", COLUMNS="200")

    def on_a_terminal(extra: dict[str, str]) -> str:
        leader, follower = os.openpty()
        try:
            subprocess.run(
                [sys.executable, "-m", "agentworld", "--db", db_url, "approvals", "w"],
                stdin=subprocess.DEVNULL, stdout=follower, stderr=subprocess.DEVNULL,
                env={**env, **extra}, timeout=60, check=True,
            )  # fmt: skip
            os.close(follower)
            follower = -1
            chunks = []
            while True:
                try:
                    chunk = os.read(leader, 65536)
                except OSError:  # the terminal's other end is closed: all was read
                    break
                if not chunk:
                    break
                chunks.append(chunk)
            return b"".join(chunks).decode()
        finally:
            os.close(leader)
            if follower >= 0:
                os.close(follower)

    coloured = on_a_terminal({})
    assert "\x1b[32m    +Agent World is the runtime." in coloured
    assert "\x1b[31m    -Agent World is teh runtime." in coloured
    assert "\x1b[36m    @@ -2,7 +2,7 @@" in coloured
    plain = on_a_terminal({"NO_COLOR": "1"})
    assert "    +Agent World is the runtime." in plain and "\x1b[3" not in plain


def test_control_characters_in_a_diff_are_shown_escaped(cli: Any, tmp_path: Path) -> None:
    call = {"name": "write_file", "arguments": {"path": "t.txt", "content": "ok \x1b[2Khidden\r\n"}}
    scripted_agent(cli, tmp_path, call)
    (approval,) = cli("send", "w", "@a1 write", "--json").json()["pendingApprovals"]
    assert approval["diff"].endswith("+ok \x1b[2Khidden\r\n")  # the document holds it exactly
    shown = cli("approvals", "w").stdout
    assert "    +ok \\e[2Khidden\\r\n" in shown and "\x1b" not in shown and "\r" not in shown


SECRET = "s3cr3t-value-0123456789"


@pytest.fixture
def deployment_secret(monkeypatch: pytest.MonkeyPatch) -> str:
    """A secret in the environment of every process of the test (set before ``db_url``
    starts a worker on Temporal, which is where the diff is made there)."""
    monkeypatch.setenv("SERVICE_API_TOKEN", SECRET)
    return SECRET


def test_a_secret_value_of_the_process_is_masked_in_the_shown_diff(deployment_secret: str, cli: Any, tmp_path: Path) -> None:
    secret = deployment_secret
    call = {"name": "write_file", "arguments": {"path": "conf.txt", "content": f"token {secret}\n"}}
    work = scripted_agent(cli, tmp_path, call)
    env = {"SERVICE_API_TOKEN": secret}

    (approval,) = cli("send", "w", "@a1 write", "--json", env=env).json()["pendingApprovals"]

    assert secret not in approval["diff"] and "+token [REDACTED:SERVICE_API_TOKEN]\n" in approval["diff"]
    assert "    +token [REDACTED:SERVICE_API_TOKEN]\n" in cli("approvals", "w", env=env).stdout
    (request,) = [e for e in cli("audit", "w", "--json").json()["audit"] if e["event"] == "request"]
    assert secret not in request["detail"]["diff"]
    cli("approve", "w", approval["approvalId"], "--decision", "approve", env=env)
    assert (work / "conf.txt").read_text() == f"token {secret}\n"  # the change itself is whole

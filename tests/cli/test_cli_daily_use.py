"""A CLI people can use all day (issue 14): ids never cut, messages from stdin or a file, chats
that can be switched, renamed, deleted and exported, text that is formatted and says when there
is nothing, hints that can be pasted, one timestamp form in JSON.

Each test drives real ``agentworld`` processes on a real SQLite file with the scripted model.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

NARROW = {"COLUMNS": "80"}
ID = re.compile(r"\b(?:chat|approval|grant|call|msg)_[0-9A-Za-z_]+")
TIMESTAMP_KEYS = {"createdAt", "updatedAt", "lastActive", "at", "startedAt", "finishedAt"}


def touch_then_done(tmp_path: Path, name: str = "a") -> Path:
    """A script: the agent asks to run ``touch RELEASED``, then says it is done."""
    path = tmp_path / f"{name}.json"
    call = {"name": "shell_cmd", "arguments": {"command": "touch RELEASED"}}
    path.write_text(json.dumps([{"tool_calls": [call]}, "done"]))
    return path


def world_with_agent(cli: Any, tmp_path: Path, *, work: Path | None = None) -> Path:
    work = work or tmp_path / "work"
    work.mkdir(parents=True, exist_ok=True)
    cli("world", "create", "w", "--no-streaming", "--working-dir", str(work))
    cli("agent", "create", "w", "a", "--provider", "scripted",
        "--model", f"file:{touch_then_done(tmp_path)}")  # fmt: skip
    return work


@dataclass
class Piped:
    code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)


def one_line_error(result: Any, *words: str) -> str:
    assert result.code != 0
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    for word in words:
        assert word in lines[0], lines[0]
    return str(lines[0])


def send_input(db_url: str, tmp_path: Path, *args: str, stdin: str) -> Piped:
    """``agentworld --db DB ARGS`` with ``stdin`` piped in (the ``cli`` fixture has no input)."""
    env = {**os.environ, "HOME": str(tmp_path), "NO_COLOR": "1", "COLUMNS": "200"}
    env.pop("AGENTWORLD_DB", None)
    proc = subprocess.run(
        [sys.executable, "-m", "agentworld", "--db", db_url, *args],
        input=stdin, capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    return Piped(proc.returncode, proc.stdout, proc.stderr)


# -- ids and paths ----------------------------------------------------------------------


def test_no_id_or_path_is_cut_at_80_columns(cli: Any, tmp_path: Path) -> None:
    work = tmp_path / "a-working-directory-with-a-long-name" / "and-another-level-below-it"
    policy = tmp_path / "policies-of-the-release-team" / "rules-for-the-release-chores.toml"
    policy.parent.mkdir()
    policy.write_text('[[rule]]\nname = "echo"\ntoolName = "shell_cmd"\n'
                      'commandPrefix = "echo"\ndecision = "allow"\npriority = 100\n')  # fmt: skip
    world_with_agent(cli, tmp_path, work=work)
    cli("world", "update", "w", "--policy", str(policy))
    first = cli("send", "w", "@a mark the release", "--json").json()
    cli("approve", "w", first["pendingApprovals"][0]["approvalId"], "--decision", "approve",
        "--scope", "session")  # fmt: skip
    cli("chat", "new", "w")
    waiting = cli("send", "w", "@a once more", "--json").json()["pendingApprovals"][0]

    chats = [c["chatId"] for c in cli("chat", "list", "w", "--json").json()["chats"]]
    grants = [g["grantId"] for g in cli("approvals", "w", "--grants", "--json").json()["grants"]]
    audit = cli("audit", "w", "--json").json()["audit"]
    calls = [
        call["id"]
        for chat in chats
        for m in cli("messages", "w", "--chat", chat, "--json").json()["messages"]
        for call in m["tool_calls"] or ()
    ]
    known = {*chats, *grants, *calls, *(e["approvalId"] for e in audit if e["approvalId"])}
    expected = {
        ("chat", "list", "w"): chats,
        ("world", "list"): [waiting["chatId"]],
        ("world", "show", "w"): [str(work), str(policy)],
        ("approvals", "w"): [waiting["approvalId"], str(work)],
        ("approvals", "w", "--grants"): grants,
        ("audit", "w"): [e["approvalId"] for e in audit if e["approvalId"]],
        ("messages", "w"): [waiting["approvalId"]],
        ("policy", "list", "w"): [str(policy)],
        ("tool-logs", "w"): [calls[0]],
        ("agent", "list", "w"): [str(touch_then_done(tmp_path))],
        ("tools", "w"): ["shell_cmd", "read_file", "list_files"],
    }

    for command, wanted in expected.items():
        shown = cli(*command, env=NARROW).stdout
        assert "…" not in shown, (command, shown)
        for found in ID.findall(shown):
            assert found in known, f"{' '.join(command)} cut an id: {found!r}\n{shown}"
        for whole in wanted:
            assert whole in shown, f"{' '.join(command)} does not show {whole!r} whole\n{shown}"


def test_a_wide_terminal_still_gets_a_table(cli: Any, tmp_path: Path) -> None:
    world_with_agent(cli, tmp_path)
    chat = cli("chat", "new", "w").stdout.strip()

    wide = cli("chat", "list", "w", env={"COLUMNS": "200"}).stdout.splitlines()
    narrow = cli("chat", "list", "w", env=NARROW).stdout.splitlines()

    assert wide[1].split() == ["chat", "id", "name", "messages", "tokens", "created", "branch", "of", "current"]
    assert narrow[1] == chat  # a record: the id on a line of its own
    assert "  name: New chat" in narrow


# -- the message: TEXT, standard input or a file ------------------------------------------


def test_send_reads_a_one_megabyte_message_from_stdin_or_a_file(
    cli: Any, db_url: str, tmp_path: Path
) -> None:
    cli("world", "create", "w", "--no-streaming")
    cli("agent", "create", "w", "a", "--provider", "scripted", "--model", "echo")
    big = "@a " + "x" * (1024 * 1024)
    (tmp_path / "big.txt").write_text(big + "\n")

    piped = send_input(db_url, tmp_path, "send", "w", "-", "--json", stdin=big + "\n")
    from_file = cli("send", "w", "--file", str(tmp_path / "big.txt"), "--json")

    assert piped.code == 0, piped.stderr
    for result in (piped, from_file):
        human, answer = result.json()["messages"]
        assert human["content"] == big  # whole, without the newline the pipe or file ended with
        assert answer["content"] == f"echo: {big}"


@pytest.mark.parametrize(
    ("args", "stdin", "reason"),
    [
        (("",), None, "the message is empty"),
        (("  \n\t ",), None, "the message is empty"),
        (("-",), "", "the message is empty"),
        (("-",), "\n\n", "the message is empty"),
        (("--file", "{empty}"), None, "the message is empty"),
        ((), None, "missing the message"),
        (("hi", "--file", "{empty}"), None, "not both"),
        (("--file", "{missing}"), None, "cannot read message file"),
    ],
)
def test_a_missing_or_empty_message_is_refused_in_one_line(
    cli: Any, db_url: str, tmp_path: Path, args: tuple[str, ...], stdin: str | None, reason: str
) -> None:
    cli("world", "create", "w", "--no-streaming")
    (tmp_path / "empty.txt").write_text("\n")
    paths = {"{empty}": str(tmp_path / "empty.txt"), "{missing}": str(tmp_path / "nope.txt")}
    argv = ["send", "w", *(paths.get(a, a) for a in args)]

    result = send_input(db_url, tmp_path, *argv, stdin=stdin or "")

    one_line_error(result, reason)
    assert cli("messages", "w", "--json").json()["messages"] == []


# -- chats -----------------------------------------------------------------------------


def test_chat_use_makes_a_chat_current(cli: Any, tmp_path: Path) -> None:
    cli("world", "create", "w", "--no-streaming")
    cli("agent", "create", "w", "a", "--provider", "scripted", "--model", "echo")
    first = cli("chat", "new", "w").stdout.strip()
    cli("chat", "new", "w")

    used = cli("chat", "use", "w", first, "--json").json()
    sent = cli("send", "w", "@a back to the first", "--json").json()

    assert used == {"chatId": first, "current": True}
    assert cli("world", "show", "w", "--json").json()["currentChatId"] == first
    assert sent["chatId"] == first
    listed = cli("chat", "list", "w", env=NARROW).stdout
    assert f"{first}\n" in listed and "current: yes" in listed


def test_a_renamed_chat_keeps_its_name(cli: Any, tmp_path: Path) -> None:
    cli("world", "create", "w", "--no-streaming")
    cli("agent", "create", "w", "a", "--provider", "scripted", "--model", "echo")
    chat = cli("chat", "new", "w").stdout.strip()

    renamed = cli("chat", "rename", "w", chat, "  Release   plan ", "--json").json()
    cli("send", "w", "@a what is the plan?")  # the first exchange would title a new chat

    assert renamed == {"chatId": chat, "name": "Release plan"}
    assert cli("chat", "list", "w", "--json").json()["chats"][0]["name"] == "Release plan"
    one_line_error(cli("chat", "rename", "w", chat, " ", check=False), "chat name")
    one_line_error(cli("chat", "rename", "w", chat, "x" * 201, check=False), "chat name")


def test_deleting_a_chat_deletes_its_messages_and_waiting_approvals(
    cli: Any, tmp_path: Path
) -> None:
    world_with_agent(cli, tmp_path)
    keep = cli("chat", "new", "w").stdout.strip()
    cli("send", "w", "@a hello")
    doomed = cli("chat", "new", "w").stdout.strip()
    waiting = cli("send", "w", "@a mark the release", "--json").json()["pendingApprovals"][0]

    deleted = cli("chat", "delete", "w", doomed, "--json").json()

    assert deleted == {"deleted": doomed}
    assert [c["chatId"] for c in cli("chat", "list", "w", "--json").json()["chats"]] == [keep]
    assert cli("world", "show", "w", "--json").json()["currentChatId"] is None
    left = cli("approvals", "w", "--json").json()["approvals"]
    assert [a["chatId"] for a in left] == [keep]  # the other chat's request stays
    one_line_error(
        cli("approve", "w", waiting["approvalId"], "--decision", "approve", check=False),
        waiting["approvalId"],
    )
    assert not (tmp_path / "work" / "RELEASED").exists()
    audit = cli("audit", "w", "--json").json()["audit"]
    assert [e["event"] for e in audit if e["chatId"] == doomed] == ["request", "chat_deleted"]
    assert len(cli("messages", "w", "--chat", keep, "--json").json()["messages"]) == 3
    one_line_error(cli("chat", "delete", "w", doomed, check=False), doomed, "not found")


def test_chat_export_writes_the_transcript_as_markdown(cli: Any, tmp_path: Path) -> None:
    world_with_agent(cli, tmp_path)
    chat = cli("chat", "new", "w").stdout.strip()
    cli("chat", "rename", "w", chat, "Release")
    approval = cli("send", "w", "@a mark the release", "--json").json()["pendingApprovals"][0]
    cli("approve", "w", approval["approvalId"], "--decision", "approve")
    out = tmp_path / "exported.md"

    printed = cli("chat", "export", "w", chat).stdout
    written = cli("chat", "export", "w", chat, "--out", str(out))

    assert printed == out.read_text()
    assert str(out) in written.stdout
    assert printed.startswith(f"# Release\n\nWorld `w` · chat `{chat}` · 6 messages")
    assert "\n## human · " in printed and "\n## a · " in printed
    assert '```json\n{\n  "command": "touch RELEASED"\n}\n```' in printed
    assert f"Approval requested (`{approval['approvalId']}`): {approval['message']}" in printed
    assert f"Approval `{approval['approvalId']}`: approved once." in printed
    assert printed.rstrip().endswith("done")


@pytest.mark.parametrize(
    "command",
    [
        ("chat", "use", "w", "chat_nope"),
        ("chat", "rename", "w", "chat_nope", "x"),
        ("chat", "delete", "w", "chat_nope"),
        ("chat", "export", "w", "chat_nope"),
        ("send", "w", "@a hi", "--chat", "chat_nope"),
        ("messages", "w", "--chat", "chat_nope"),
        ("messages", "w", "--agent", "a", "--chat", "chat_nope"),
        ("approvals", "w", "--chat", "chat_nope"),
    ],
)
def test_an_unknown_chat_id_is_an_error_not_an_empty_list(
    cli: Any, command: tuple[str, ...]
) -> None:
    cli("world", "create", "w", "--no-streaming")
    cli("agent", "create", "w", "a", "--provider", "scripted", "--model", "echo")

    one_line_error(cli(*command, check=False), "chat_nope", "not found")
    one_line_error(cli(*command, "--json", check=False), "chat_nope", "not found")


# -- text output -----------------------------------------------------------------------


def test_text_output_is_formatted_never_a_python_repr(cli: Any, tmp_path: Path) -> None:
    world_with_agent(cli, tmp_path)
    cli("world", "update", "w", "--tool-env", "LANG_A", "--tool-env", "LANG_B")
    cli("send", "w", "@a mark the release")

    agent = cli("agent", "show", "w", "a").stdout
    world = cli("world", "show", "w").stdout

    assert re.search(r"^  usage: \d+ in / \d+ out, unknown \(1 call unpriced\)$", agent, re.M), agent
    assert "  toolEnv: LANG_A, LANG_B\n" in world
    assert "streaming: no" in world
    for shown in (agent, world):
        assert "{'" not in shown and "['" not in shown and "+00:00" not in shown
        assert re.search(r"createdAt: \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", shown)


def test_empty_states_say_so(cli: Any) -> None:
    cli("world", "create", "w", "--no-streaming")

    assert cli("chat", "list", "w").stdout.startswith("no chats yet in world 'w'")
    assert cli("messages", "w").stdout.startswith("no messages yet")
    assert cli("approvals", "w").stdout == "no pending approvals\n"
    assert cli("approvals", "w", "--grants").stdout == "no approval grants in world 'w'\n"
    assert cli("audit", "w").stdout == "the audit log of world 'w' is empty\n"


def test_hints_are_commands_ready_to_paste(cli: Any, db_url: str, tmp_path: Path) -> None:
    world_with_agent(cli, tmp_path)
    empty = cli("messages", "w").stdout
    sent = cli("send", "w", "@a mark the release").stdout
    (approve,) = (line for line in sent.splitlines() if line.startswith("  approve:"))
    assert "WORLD" not in sent

    start = shlex.split(empty.split("start with: ", 1)[1])
    answer = shlex.split(approve.removeprefix("  approve:"))

    for hint in (start, answer):  # the database in use is named, since it is not the default
        assert hint[:3] == ["agentworld", "--db", db_url], hint
    assert start[3:] == ["send", "w", "@a hello"]
    assert answer[3:5] == ["approve", "w"] and answer[-2:] == ["--decision", "approve"]
    env = {**os.environ, "HOME": str(tmp_path)}
    env.pop("AGENTWORLD_DB", None)
    pasted = subprocess.run([sys.executable, "-m", *answer], capture_output=True, text=True,
                            env=env, timeout=120)  # fmt: skip
    assert pasted.returncode == 0, pasted.stderr
    assert "approved once" in pasted.stdout and "a: done" in pasted.stdout
    assert (tmp_path / "work" / "RELEASED").exists()


def test_an_approval_request_is_shown_as_one_not_as_a_tool_call(cli: Any, tmp_path: Path) -> None:
    world_with_agent(cli, tmp_path)
    approval = cli("send", "w", "@a mark the release", "--json").json()["pendingApprovals"][0]
    cli("approve", "w", approval["approvalId"], "--decision", "deny")

    transcript = cli("messages", "w").stdout

    assert "client.requestApproval" not in transcript
    assert f"  approval requested: {approval['message']}" in transcript
    assert f"↳ approval {approval['approvalId']}: denied" in transcript
    assert '  a calls shell_cmd({"command": "touch RELEASED"})' in transcript


# -- JSON ------------------------------------------------------------------------------


def timestamps(document: Any) -> list[str]:
    if isinstance(document, dict):
        return [
            *(v for k, v in document.items() if k in TIMESTAMP_KEYS and isinstance(v, str)),
            *(t for v in document.values() for t in timestamps(v)),
        ]
    if isinstance(document, list):
        return [t for item in document for t in timestamps(item)]
    return []


def test_every_json_timestamp_is_utc_written_with_z_and_tool_args_are_objects(
    cli: Any, tmp_path: Path
) -> None:
    world_with_agent(cli, tmp_path)
    sent = cli("send", "w", "@a mark the release", "--json").json()
    pending = cli("approvals", "w", "--json").json()
    approval = pending["approvals"][0]["approvalId"]
    done = cli("approve", "w", approval, "--decision", "approve", "--scope", "session",
               "--json").json()  # fmt: skip
    documents = {
        "send": sent,
        "approvals": pending,
        "approve": done,
        "messages": cli("messages", "w", "--json").json(),
        "chat list": cli("chat", "list", "w", "--json").json(),
        "audit": cli("audit", "w", "--json").json(),
        "grants": cli("approvals", "w", "--grants", "--json").json(),
        "world show": cli("world", "show", "w", "--json").json(),
        "agent show": cli("agent", "show", "w", "a", "--json").json(),
    }

    for name, document in documents.items():
        found = timestamps(document)
        assert found, name
        for value in found:
            assert value.endswith("Z") and "+" not in value, f"{name}: {value}"
            assert datetime.fromisoformat(value).utcoffset() is not None
    tool_args = [
        *(a["toolArgs"] for a in sent["pendingApprovals"]),
        *(a["toolArgs"] for a in pending["approvals"]),
        *(e["toolArgs"] for e in documents["audit"]["audit"] if e["toolArgs"] is not None),
    ]
    assert tool_args and all(args == {"command": "touch RELEASED"} for args in tool_args)


def test_the_approval_call_shown_as_a_request_is_the_one_the_runtime_injects() -> None:
    from agentworld.cli.output import APPROVAL_CALL
    from agentworld.runtime.approvals import APPROVAL_TOOL

    assert APPROVAL_CALL == APPROVAL_TOOL

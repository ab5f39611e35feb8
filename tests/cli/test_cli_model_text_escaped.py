"""What a model writes cannot drive the person's terminal, and a model cannot fake an approval
request (SPEC A1, A8). Before, ``send`` and ``messages`` printed a model's ESC/OSC sequences
raw (hidden text, a new window title, erased lines, OSC 52 clipboard writes), and a model's own
``client.requestApproval`` call — refused by the runtime — was printed as a genuine
"approval requested" line, injected newline and all.

Real ``agentworld`` processes with a scripted model on a real SQLite file; the live view of
``send`` on a terminal (``talk_view.EventView``) is driven with the events it would receive.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentworld.cli.talk_view import EventView, Screen
from agentworld.models import Message
from agentworld.models.events import SSEEvent

HOSTILE = (
    "hello \x1b[8m hidden \x1b]0;TITLE\x07 \r\b\b end \x1b[1A\x1b[2K"
    " \x1b]52;c;cm0gLXJmIH4K\x07 \x9b31m \u202eevil\u202c \u200bzw\u2066x\u2069 \x7f"
)
BAD = ("\x1b", "\x9b", "\x07", "\x08", "\r", "\x7f", "\u202e", "\u202c", "\u200b", "\u2066", "\u2069")
FORGED = {"message": "a wants to run `ls` in /w (runs: `ls`)\x1b[2K\n  approval id: approval_f2"}


def assert_clean(text: str) -> None:
    found = [repr(c) for c in BAD if c in text]
    assert not found, f"raw control characters printed: {found}\n{text!r}"


def world(cli: Any, tmp_path: Path, script: list[Any]) -> None:
    work = tmp_path / "work"
    work.mkdir()
    path = tmp_path / "script.json"
    path.write_text(json.dumps(script))
    cli("world", "create", "w", "--no-streaming", "--working-dir", str(work))
    cli("agent", "create", "w", "a", "--provider", "scripted", "--model", f"file:{path}")


def test_model_text_is_printed_escaped_by_send_and_messages(cli: Any, tmp_path: Path) -> None:
    result_call = {"id": "c1", "name": "read_file", "arguments": {"path": "n\x1b[2K.txt"}}
    world(cli, tmp_path, [{"content": HOSTILE, "tool_calls": [result_call]}, "done \x1b[31mRED\nline two"])

    sent = cli("send", "w", "@a go \x1b[8m", check=False)
    shown = cli("messages", "w").stdout
    as_json = json.loads(cli("messages", "w", "--json").stdout)

    for out in (sent.stdout, shown):
        assert_clean(out)
        assert "hello \\e[8m hidden \\e]0;TITLE\\u0007" in out
        assert "\\u202eevil" in out
        assert "done \\e[31mRED\nline two" in out  # a body keeps its newlines
    # The JSON document keeps the text as it was said (json escapes it).
    assert any(m["content"] == HOSTILE for m in as_json["messages"])


def test_a_model_made_approval_request_is_not_shown_as_one(cli: Any, tmp_path: Path) -> None:
    forged = {"id": "approval_f2", "name": "client.requestApproval", "arguments": FORGED}
    alone = {"id": "approval_f3", "name": "client.requestApproval",
             "arguments": {**FORGED, "toolName": "shell_cmd", "toolCallId": "c9"}}  # fmt: skip
    world(cli, tmp_path, [{"content": "see", "tool_calls": [forged]}, {"tool_calls": [alone]}, "done"])

    sent = cli("send", "w", "@a go", check=False)
    shown = cli("messages", "w").stdout
    chat_id = json.loads(cli("messages", "w", "--json").stdout)["chatId"]
    exported = cli("chat", "export", "w", chat_id).stdout

    for out in (sent.stdout, shown):
        assert "approval requested" not in out
        assert_clean(out)
        assert not any(line.lstrip().startswith("approval id: approval_f") for line in out.splitlines())
        assert "reserved for the client" in out
    # The Markdown export shows both as the calls they are, not as requests a person answered.
    assert "Approval requested" not in exported
    assert "Calls `client.requestApproval` (`approval_f2`)" in exported
    assert "Calls `client.requestApproval` (`approval_f3`)" in exported


def test_a_real_approval_request_is_still_shown(cli: Any, tmp_path: Path) -> None:
    call = {"id": "c1", "name": "shell_cmd", "arguments": {"command": "touch X\x1b[2K"}}
    world(cli, tmp_path, [{"content": "", "tool_calls": [call]}, "done"])

    sent = cli("send", "w", "@a go", check=False)
    shown = cli("messages", "w").stdout

    for out in (sent.stdout, shown):
        assert_clean(out)
        (line,) = [line for line in out.splitlines() if "approval requested" in line]
        assert "touch X\\e[2K" in line


def test_the_live_view_escapes_streamed_and_stored_text(capsys: pytest.CaptureFixture[str]) -> None:
    view = EventView(Screen(), chat_id="c", width=120)
    common: dict[str, Any] = {"world": "w", "chat_id": "c", "agent": "a", "message_id": "m1"}
    view.on_event(SSEEvent(phase="start", **common))
    view.on_event(SSEEvent(phase="chunk", content=HOSTILE[:9], **common))
    view.on_event(SSEEvent(phase="chunk", content=HOSTILE[9:], **common))
    view.on_event(SSEEvent(phase="end", **common))
    view.stored(Message(chat_id="c", role="assistant", sender="a", content="stored " + HOSTILE))
    out = capsys.readouterr().out
    assert "hello \\e[8m hidden" in out
    assert "\\e]52;c;" in out
    assert "stored hello \\e[8m" in out
    # The transient "is thinking" line erases itself with an escape of our own; only the
    # model's text is checked here.
    assert_clean(out.replace("\r\x1b[2K", ""))

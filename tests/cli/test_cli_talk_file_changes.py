"""A file tool's approval in ``agentworld talk`` (SPEC F1, F2), in a real pseudo-terminal: the
diff is shown above the question, whole and coloured on a colour terminal; approving writes
exactly that; ``e`` opens the arguments in the person's editor and the edited content is what
is written."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest
from test_cli_talk import PROMPT, QUESTION, make_team, talk, talk_env  # noqa: F401 (fixtures)

from agentworld.cli.talk_question import ARM_SECONDS
from agentworld.testing.openai_wire import OpenAIWireServer, Reply, ToolCallSpec

TYPO = "".join(f"line {n}\n" for n in range(1, 5)) + "Agent World is teh runtime.\n" + "".join(
    f"line {n}\n" for n in range(6, 10)
)

pytestmark = pytest.mark.both_engines_wide  # on Temporal too in the wide run (tests/conftest.py)
FIXED = TYPO.replace("teh runtime", "the runtime")


def ops_calls(script: Any, tool: str, arguments: dict[str, Any]) -> None:
    """Agent ``ops`` makes one call, then says what its result began with."""

    def ops(body: dict[str, Any]) -> Reply:
        last = body["messages"][-1]
        if last["role"] == "tool":
            return Reply.text("ops saw: " + " ".join(last["content"].split())[:120])
        return Reply.tools(ToolCallSpec(tool, json.dumps(arguments)))

    script.by_agent["ops"] = ops


def test_an_edit_file_approval_shows_its_diff_coloured_above_the_question_and_approving_writes_it(
    talk: Any, talk_env: dict[str, str], script: Any, server: OpenAIWireServer, db_url: str, tmp_path: Path  # noqa: F811
) -> None:
    talk_env.pop("NO_COLOR", None)  # a colour terminal (TERM=xterm)
    ops_calls(script, "edit_file", {"path": "README.txt", "old": "teh runtime", "new": "the runtime"})
    work = make_team(db_url, server, tmp_path, "ops")
    (work / "README.txt").write_text(TYPO)
    term = talk("team")
    term.ready()
    term.line("@ops fix the typo")

    shown = term.expect(QUESTION)
    assert re.search(r"@@ -2,7 \+2,7 @@\s+line 2\s+line 3\s+line 4\s+-Agent World is teh runtime\.\s+"
                     r"\+Agent World is the runtime\.\s+line 6", shown)  # fmt: skip
    raw = term._raw
    assert re.search(r"\x1b\[[0-9;]*32m\s*\+Agent World is the runtime\.", raw)  # added: green
    assert re.search(r"\x1b\[[0-9;]*31m\s*-Agent World is teh runtime\.", raw)  # removed: red
    assert re.search(r"\x1b\[[0-9;]*36m\s*@@ -2,7", raw)  # the hunk header: cyan
    assert (work / "README.txt").read_text() == TYPO
    time.sleep(ARM_SECONDS + 0.3)
    term.type("o")
    term.expect(r"ops saw: ")
    term.expect(PROMPT)
    term.child.sendcontrol("d")

    assert term.exit_status() == 0
    assert (work / "README.txt").read_text() == FIXED


def test_a_long_new_file_is_shown_whole_above_the_question(
    talk: Any, script: Any, server: OpenAIWireServer, db_url: str, tmp_path: Path  # noqa: F811
) -> None:
    content = "".join(f"entry {n}\n" for n in range(1, 151))
    ops_calls(script, "write_file", {"path": "long.txt", "content": content})
    work = make_team(db_url, server, tmp_path, "ops")
    term = talk("team")
    term.ready()
    term.line("@ops write it")

    shown = term.expect(QUESTION, timeout=20)
    assert all(f"+entry {n}\n" in shown.replace("\r", "") for n in range(1, 151))
    term.child.sendcontrol("c")  # left pending
    term.expect(r"left pending")
    term.expect(PROMPT)
    term.child.sendcontrol("d")
    assert term.exit_status() == 0
    assert not (work / "long.txt").exists()


def test_e_opens_a_write_file_call_in_the_editor_and_the_edited_content_is_written(
    talk: Any, talk_env: dict[str, str], script: Any, server: OpenAIWireServer, db_url: str, tmp_path: Path  # noqa: F811
) -> None:
    talk_env.pop("VISUAL", None)
    talk_env["EDITOR"] = "sed -i s/draft/final/"  # the editor: changes the content it is given
    ops_calls(script, "write_file", {"path": "notes.txt", "content": "a draft note\n"})
    work = make_team(db_url, server, tmp_path, "ops")
    term = talk("team")
    term.ready()
    term.line("@ops write the note")
    term.expect(r"\+a draft note")
    term.expect(QUESTION)
    time.sleep(ARM_SECONDS + 0.3)

    term.type("e")
    term.expect(r"editing the arguments in sed")
    term.expect(r"-\s+\"content\": \"a draft note\\n\"")
    term.expect(r"\+\s+\"content\": \"a final note\\n\"")
    term.expect(r"run the edited call: \[c\]ancel")
    time.sleep(ARM_SECONDS + 0.3)
    term.type("o")
    term.expect(r"approved approval_\w+ \(once\) as edited")
    term.expect(r"ops saw: ")
    term.expect(PROMPT)
    term.child.sendcontrol("d")

    assert term.exit_status() == 0
    assert (work / "notes.txt").read_text() == "a final note\n"

"""``e`` in ``agentworld talk``: a person edits a call before approving it (SPEC F2), typed for
real into a pseudo-terminal against an agent on the loopback OpenAI wire server. The edited
command is what runs; an edit the policy denies is refused in one line and the request is asked
again; an unchanged edit approves the call as it is; long arguments go to ``$EDITOR`` as JSON."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest
from test_cli_talk import PROMPT, QUESTION, Terminal, make_team, talk, talk_env  # noqa: F401 (fixtures)

from agentworld.cli.talk_question import ARM_SECONDS
from agentworld.testing.openai_wire import OpenAIWireServer, Reply, ToolCallSpec

pytestmark = pytest.mark.both_engines_wide  # on Temporal too in the wide run (tests/conftest.py)

SCOPE = r"\[c\]ancel \[o\]nce \[s\]ession \[a\]lways"


def ops_runs(script: Any, *commands: str) -> None:
    """Agent ``ops`` runs each command (one per person's message) and says how it went; the
    result it reads may start with a note that a person changed the call."""
    planned = list(commands)

    def ops(body: dict[str, Any]) -> Reply:
        last = body["messages"][-1]
        if last["role"] == "tool":
            code = re.search(r'"exit_code": (-?\d+)', last["content"])
            edited = "as asked" if last["content"].lstrip().startswith("{") else "edited"  # a note first
            return Reply.text(f"ops saw: exit {code[1]} ({edited})" if code else f"ops saw: {last['content']}")
        return Reply.tools(ToolCallSpec("shell_cmd", json.dumps({"command": planned.pop(0)})))

    script.by_agent["ops"] = ops


def armed(term: Terminal, pattern: str) -> None:
    term.expect(pattern)
    time.sleep(ARM_SECONDS + 0.3)


NO_DELETING = """
[[rule]]
name = "no deleting"
toolName = "shell_cmd"
commandPrefix = "rm"
decision = "deny"
priority = 200
denyMessage = "Deleting files is not allowed in this world."
"""


def asked(talk: Any, script: Any, server: OpenAIWireServer, db_url: str, tmp_path: Path,  # noqa: F811
          *commands: str, cli: Any = None) -> tuple[Terminal, Path]:  # fmt: skip
    """``ops`` is asked to run ``commands[0]``, and talk now asks the person (with ``cli``:
    in a world whose policy denies ``rm``)."""
    ops_runs(script, *commands)
    work = make_team(db_url, server, tmp_path, "ops")
    if cli is not None:
        policy = tmp_path / "policy.toml"
        policy.write_text(NO_DELETING)
        cli("world", "update", "team", "--policy", str(policy))
    term = talk("team")
    term.ready()
    term.line("@ops do it")
    armed(term, QUESTION)
    return term, work


def test_e_edits_the_command_line_in_place_and_the_edited_command_runs(
    talk: Any, cli: Any, script: Any, server: OpenAIWireServer, db_url: str, tmp_path: Path  # noqa: F811
) -> None:
    term, work = asked(talk, script, server, db_url, tmp_path, "touch RISKY")

    term.type("e")
    term.expect(r"command › touch RISKY")
    term.type("\x15touch SAFE\r")  # Ctrl-U empties the line
    term.expect(r"edited command line: touch SAFE")
    armed(term, rf"run the edited call: {SCOPE}")
    term.type("o")
    term.expect(r"approved approval_\w+ \(once\) as edited")
    term.expect(r"ops saw: exit 0 \(edited\)")
    term.expect(PROMPT)
    term.child.sendcontrol("d")

    assert term.exit_status() == 0
    assert (work / "SAFE").exists() and not (work / "RISKY").exists()
    (decision,) = [e for e in cli("audit", "team", "--json").json()["audit"] if e.get("decision") == "approve"]
    assert decision["toolArgs"] == {"command": "touch SAFE"}
    assert decision["detail"]["originalArgs"] == {"command": "touch RISKY"}


def test_an_edit_the_policy_denies_is_refused_in_one_line_and_the_request_is_asked_again(
    talk: Any, cli: Any, script: Any, server: OpenAIWireServer, db_url: str, tmp_path: Path  # noqa: F811
) -> None:
    term, work = asked(talk, script, server, db_url, tmp_path, "touch ASKED", cli=cli)
    (work / "keep").mkdir()

    term.type("e")
    term.expect(r"command › touch ASKED")
    term.type("\x15rm -rf keep\r")
    armed(term, rf"run the edited call: {SCOPE}")
    term.type("o")
    term.expect(r"✖ [^\n]*Deleting files is not allowed in this world\.")
    term.expect(r"approval needed: ops wants to run `touch ASKED`")  # asked again, still pending
    armed(term, QUESTION)
    (waiting,) = cli("approvals", "team", "--json").json()["approvals"]
    assert waiting["toolArgs"] == {"command": "touch ASKED"}
    term.type("d")
    term.expect(r"ops saw: [^\n]*denied")
    term.expect(PROMPT)
    term.child.sendcontrol("d")

    assert term.exit_status() == 0
    assert (work / "keep").is_dir() and not (work / "ASKED").exists()


def test_an_unchanged_edit_approves_the_call_as_it_is_and_a_cancelled_one_asks_again(
    talk: Any, script: Any, server: OpenAIWireServer, db_url: str, tmp_path: Path  # noqa: F811
) -> None:
    term, work = asked(talk, script, server, db_url, tmp_path, "touch SAME")

    term.type("e")
    term.expect(r"command › touch SAME")
    term.child.sendcontrol("c")  # cancels the edit: back to the question, which arms afresh
    term.expect(r"edit cancelled: the request is asked again")
    armed(term, QUESTION)
    term.type("e")
    term.expect(r"command › touch SAME")
    term.type("\r")
    term.expect(r"nothing changed: the call runs as it is")
    term.expect(rf"run it as it is: {SCOPE}")
    term.type("o")  # before the scope question armed: nothing
    time.sleep(ARM_SECONDS + 0.3)
    assert not (work / "SAME").exists()
    term.type("o")
    term.expect(r"approved approval_\w+ \(once\)\n")
    term.expect(r"ops saw: exit 0 \(as asked\)")
    term.expect(rf"{PROMPT} o")  # the early key, kept for the next message
    term.child.sendcontrol("c")
    term.child.sendcontrol("d")

    assert term.exit_status() == 0
    assert (work / "SAME").exists()


def test_a_long_command_is_edited_as_json_in_the_editor_the_person_chose(
    talk: Any, talk_env: dict[str, str], script: Any, server: OpenAIWireServer, db_url: str, tmp_path: Path  # noqa: F811
) -> None:
    talk_env.pop("VISUAL", None)
    talk_env["EDITOR"] = "sed -i s/LONG_RISKY/SAFE/"  # the editor: changes the file it is given
    long = "touch LONG_RISKY && echo " + "x" * 200
    term, work = asked(talk, script, server, db_url, tmp_path, long)

    term.type("e")
    term.expect(r"editing the arguments in sed")
    term.expect(r"edited arguments:")
    term.expect(r"\+\s+\"command\": \"touch SAFE && echo x+")
    armed(term, rf"run the edited call: {SCOPE}")
    term.type("o")
    term.expect(r"ops saw: exit 0 \(edited\)")
    term.expect(PROMPT)
    term.child.sendcontrol("d")

    assert term.exit_status() == 0
    assert (work / "SAFE").exists() and not (work / "LONG_RISKY").exists()


def test_without_an_editor_json_arguments_are_edited_in_place_and_bad_json_asks_again(
    talk: Any, talk_env: dict[str, str], script: Any, server: OpenAIWireServer, db_url: str, tmp_path: Path  # noqa: F811
) -> None:
    for name in ("VISUAL", "EDITOR"):
        talk_env.pop(name, None)
    long = "touch NEVER && echo " + "y" * 200
    term, work = asked(talk, script, server, db_url, tmp_path, long)

    term.type("e")
    term.expect(r"edit the arguments \(JSON\)")
    term.expect(r"arguments › \{")
    term.type("\x1b>\x08\x08\x08")  # to the end, then break the JSON's closing brace
    term.type("\r")
    term.expect(r"✖ the edited arguments are not JSON")
    armed(term, QUESTION)
    term.type("d")
    term.expect(r"ops saw: [^\n]*denied")
    term.expect(PROMPT)
    term.child.sendcontrol("d")

    assert term.exit_status() == 0
    assert not (work / "NEVER").exists()


def test_a_call_holding_a_secret_is_edited_with_the_secret_masked_and_runs_with_it(
    talk: Any, talk_env: dict[str, str], script: Any, server: OpenAIWireServer, db_url: str, tmp_path: Path  # noqa: F811
) -> None:
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    talk_env.pop("VISUAL", None)
    talk_env["EDITOR"] = "sed -i s/shown.txt/kept.txt/"
    term, work = asked(talk, script, server, db_url, tmp_path, f"printf %s {token} > shown.txt")

    term.type("e")
    term.expect(r"edited arguments:")
    term.expect(r"\+\s+\"command\": \"printf %s \[REDACTED:[\w-]+\] > kept\.txt\"")
    armed(term, rf"run the edited call: {SCOPE}")
    term.type("o")
    term.expect(r"ops saw: exit 0 \(edited\)")
    term.expect(PROMPT)
    term.child.sendcontrol("d")

    assert term.exit_status() == 0
    assert token not in term.text  # never on the screen
    assert (work / "kept.txt").read_text() == token and not (work / "shown.txt").exists()

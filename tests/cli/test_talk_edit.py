"""How ``talk`` lets a person edit a call before approving it: which form the edit takes, what
the edited text becomes, and which calls are not offered for editing."""

from __future__ import annotations

import json

from agentworld.approval.display import shown
from agentworld.cli.talk_edit import (
    CannotEdit,
    Edited,
    EditPlan,
    NotACall,
    arguments_json,
    edit_plan,
    edited_call,
    editor_command,
)


def plan(tool: str, arguments: dict[str, object]) -> EditPlan:
    made = edit_plan(tool, json.dumps(arguments), shown(arguments))
    assert isinstance(made, EditPlan), made
    return made


def test_a_short_shell_command_is_edited_in_place_as_its_line_and_keeps_its_directory() -> None:
    line = plan("shell_cmd", {"command": "rm -rf build", "directory": "app"})

    assert (line.form, line.text) == ("line", "rm -rf build")
    assert edited_call(line, "rm -rf build/cache\n") == Edited({"command": "rm -rf build/cache", "directory": "app"})
    assert edited_call(line, " rm -rf build ") == Edited(None)  # unchanged: approved as it is
    assert edited_call(line, "   ") == NotACall("the command line is empty")


def test_a_shell_command_with_parameters_is_edited_as_the_whole_line_that_runs() -> None:
    line = plan("shell_cmd", {"command": "grep", "parameters": ["a b", "notes.txt"]})

    assert line.text == "grep 'a b' notes.txt"
    assert edited_call(line, "grep 'a c' notes.txt") == Edited({"command": "grep 'a c' notes.txt"})
    assert edited_call(line, "grep 'a b' notes.txt") == Edited(None)


def test_long_or_multi_line_commands_and_other_tools_are_edited_as_json() -> None:
    long = plan("shell_cmd", {"command": "echo " + "x" * 200})
    multi = plan("shell_cmd", {"command": "cd app\nmake"})
    write = plan("write_file", {"path": "notes.txt", "content": "one\ntwo\n"})

    assert (long.form, multi.form, write.form) == ("json", "json", "json")
    assert json.loads(write.text) == {"path": "notes.txt", "content": "one\ntwo\n"}
    edited = write.text.replace("two", "three")
    assert edited_call(write, edited) == Edited({"path": "notes.txt", "content": "one\nthree\n"})
    assert edited_call(write, write.text) == Edited(None)


def test_edited_json_that_is_not_an_object_is_not_a_call() -> None:
    write = plan("write_file", {"path": "a", "content": "b"})

    assert isinstance(edited_call(write, "{not json"), NotACall)
    assert edited_call(write, "[1]") == NotACall("the edited arguments must be a JSON object")


def test_characters_that_could_disguise_text_are_written_as_escapes_of_the_same_value() -> None:
    arguments = {"content": "safe\u202eexe.txt\x1b[2K\x7f\u00e9"}

    text = arguments_json(arguments)

    assert "\u202e" not in text and "\x1b" not in text and "\x7f" not in text
    assert "\\u202e" in text and "\u00e9" in text  # readable text stays readable
    assert json.loads(text) == arguments
    assert plan("shell_cmd", {"command": "ls \u202e"}).form == "json"


def test_an_argument_holding_a_secret_is_edited_masked_as_shown_and_never_holds_the_secret() -> None:
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    arguments = {"command": f"curl -H 'Authorization: Bearer {token}' https://x", "directory": "app"}

    made = plan("shell_cmd", arguments)

    assert made.form == "json" and token not in made.text and "[REDACTED:" in made.text
    assert made.original["directory"] == "app"  # the arguments without a secret: as written
    edited = made.text.replace("https://x", "https://y")
    found = edited_call(made, edited)
    assert isinstance(found, Edited) and found.arguments is not None
    assert "[REDACTED:" in found.arguments["command"] and token not in found.arguments["command"]
    assert edited_call(made, made.text) == Edited(None)  # unchanged: approved as it is


def test_a_value_under_a_secret_name_is_masked_too_and_arguments_that_are_no_object_are_not_offered() -> None:
    made = plan("deploy", {"target": "prod", "password": "hunter2hunter2"})

    assert "hunter2" not in made.text and json.loads(made.text)["target"] == "prod"
    assert isinstance(edit_plan("shell_cmd", "[1, 2]", {}), CannotEdit)
    assert isinstance(edit_plan("shell_cmd", "{bad", {}), CannotEdit)


def test_the_editor_is_visual_then_editor_and_none_without_either() -> None:
    assert editor_command({"VISUAL": "code --wait", "EDITOR": "vi"}) == ["code", "--wait"]
    assert editor_command({"EDITOR": "nano"}) == ["nano"]
    assert editor_command({"EDITOR": "  "}) is None and editor_command({}) is None

"""How ``talk`` lets a person edit a call before approving it: which form the edit takes, what
the edited text becomes, and which calls are not offered for editing."""

from __future__ import annotations

import json

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
    made = edit_plan(tool, json.dumps(arguments))
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


def test_a_call_holding_a_secret_or_arguments_that_are_no_object_is_not_offered() -> None:
    secret = edit_plan("shell_cmd", json.dumps({"command": "curl -H 'Authorization: Bearer abcdefghijklmnop1234' x"}))

    assert isinstance(secret, CannotEdit) and "secret" in secret.reason
    assert isinstance(edit_plan("shell_cmd", "[1, 2]"), CannotEdit)
    assert isinstance(edit_plan("shell_cmd", "{bad"), CannotEdit)


def test_the_editor_is_visual_then_editor_and_none_without_either() -> None:
    assert editor_command({"VISUAL": "code --wait", "EDITOR": "vi"}) == ["code", "--wait"]
    assert editor_command({"EDITOR": "nano"}) == ["nano"]
    assert editor_command({"EDITOR": "  "}) is None and editor_command({}) is None

"""The approval question of ``agentworld talk`` as a state machine (SPEC C4): which key answers
when, with the times given (the pseudo-terminal tests in ``test_cli_talk_approval_keys.py``
type the same keys for real)."""

from __future__ import annotations

import json

from agentworld.cli.talk_asking import always_means
from agentworld.cli.talk_question import ARM_SECONDS, CHOICES, SCOPE_CHOICES, ApprovalQuestion
from agentworld.models.pending import PendingApproval

SHOWN = 100.0
ARMED = SHOWN + ARM_SECONDS


def question() -> ApprovalQuestion:
    asked = ApprovalQuestion(always_means="every `touch` command")
    asked.shown(SHOWN)
    return asked


def text(fragments: list[tuple[str, str]]) -> str:
    return "".join(part for _, part in fragments)


def test_type_ahead_before_the_question_is_shown_answers_nothing_and_is_kept() -> None:
    asked = ApprovalQuestion(always_means="every `touch` command")
    answers = [asked.press(key, SHOWN - 0.5) for key in "also say yes"]
    asked.press("enter", SHOWN - 0.4)
    asked.shown(SHOWN)

    assert answers == [None] * len("also say yes")
    assert asked.kept_text() == "also say yes"
    assert not asked.armed(SHOWN + ARM_SECONDS - 0.01) and asked.armed(ARMED)


def test_letters_within_the_arming_delay_do_nothing_and_the_delay_restarts_with_each_key() -> None:
    asked = question()

    assert asked.press("o", SHOWN + 0.1) is None
    assert asked.press("enter", SHOWN + 0.6) is None
    assert not asked.armed(ARMED)  # typing went on: the question waits for it to stop
    assert asked.press("o", SHOWN + 0.6 + ARM_SECONDS) == "once"


def test_a_key_that_is_not_typing_neither_answers_nor_holds_the_question_back() -> None:
    asked = question()

    assert asked.press("other", SHOWN + 0.5) is None
    assert asked.armed(ARMED) and asked.press("other", ARMED) is None


def test_while_not_armed_the_line_says_keys_are_ignored_and_then_what_enter_answers() -> None:
    asked = question()

    assert "(keys ignored for a moment: read the command)" in text(asked.line(SHOWN))
    armed = text(asked.line(ARMED))
    assert armed.startswith("[d]eny [o]nce [s]ession [a]lways [e]dit [l]ater") and "(Enter: deny) ›" in armed
    assert ("reverse", "[d]eny") in asked.line(ARMED)


def test_once_armed_each_letter_answers_e_edits_and_l_leaves_it_for_later() -> None:
    for key, answer in {"d": "deny", "o": "once", "S": "session", "e": "edit", "l": "later"}.items():
        assert question().press(key, ARMED) == answer
    assert question().press("x", ARMED) is None


def test_enter_answers_the_highlight_which_starts_on_deny_and_moves_with_arrows_and_tab() -> None:
    assert question().press("enter", ARMED) == "deny"
    asked = question()
    for key in ("right", "tab", "left"):
        asked.press(key, ARMED)
    assert asked.press("enter", ARMED) == "once"
    wrapped = question()
    wrapped.press("s-tab", ARMED)
    assert wrapped.press("enter", ARMED) == "later"


def test_always_needs_y_in_a_second_question_that_arms_afresh() -> None:
    asked = question()

    assert asked.press("a", ARMED) is None
    assert asked.confirming
    assert "approve ALWAYS in this world for every `touch` command? type y" in text(asked.line(ARMED))
    assert asked.press("y", ARMED + 0.1) is None  # too soon: the second question was not read yet
    assert asked.press("y", ARMED + 0.1 + ARM_SECONDS) == "always"


def test_any_key_but_y_goes_back_to_the_first_question_with_deny_highlighted() -> None:
    asked = question()
    asked.press("right", ARMED)
    asked.press("right", ARMED)
    asked.press("right", ARMED)
    asked.press("enter", ARMED)  # Enter on always: the second step too
    assert asked.confirming

    assert asked.press("enter", ARMED + ARM_SECONDS) is None
    assert not asked.confirming and asked.highlight == 0
    assert asked.press("o", ARMED + ARM_SECONDS + 0.1) is None  # the question arms afresh
    assert asked.press("enter", ARMED + 3 * ARM_SECONDS) == "deny"


def test_e_before_the_question_armed_edits_nothing_and_is_kept() -> None:
    asked = question()

    assert asked.press("e", SHOWN + 0.1) is None
    assert asked.press("e", SHOWN + 0.1 + ARM_SECONDS - 0.01) is None  # typing held it back
    assert asked.kept_text() == "ee"
    assert asked.press("e", SHOWN + 0.1 + 2 * ARM_SECONDS) == "edit"


def test_a_call_that_cannot_be_edited_is_asked_without_e() -> None:
    asked = ApprovalQuestion(always_means="x", choices=tuple(c for c in CHOICES if c != "edit"))
    asked.shown(SHOWN)

    assert "[e]dit" not in text(asked.line(ARMED))
    assert asked.press("e", ARMED) is None


def test_the_scope_of_an_edited_call_is_asked_with_cancel_first_and_always_confirmed() -> None:
    asked = ApprovalQuestion(always_means="every `ls` command", choices=SCOPE_CHOICES, title="run it as edited:")
    asked.shown(SHOWN)

    assert text(asked.line(ARMED)).startswith("run it as edited: [c]ancel [o]nce [s]ession [a]lways")
    assert "(Enter: cancel)" in text(asked.line(ARMED))
    assert asked.press("d", ARMED) is None  # deny is not one of its answers
    assert asked.press("enter", ARMED) == "cancel"
    assert asked.press("s", ARMED) == "session"
    assert asked.press("a", ARMED) is None and asked.confirming
    assert "every `ls` command" in text(asked.line(ARMED))
    assert asked.press("y", ARMED + ARM_SECONDS) == "always"


def test_keys_after_the_question_armed_once_are_not_kept() -> None:
    asked = question()
    asked.press("w", SHOWN + 0.1)
    asked.press("a", SHOWN + 0.1 + ARM_SECONDS)
    asked.press("z", SHOWN + 0.2 + ARM_SECONDS)  # ignored in the second step, not kept

    assert asked.kept_text() == "w"


def test_pasted_text_never_answers_and_is_kept_before_arming() -> None:
    asked = question()
    asked.paste("x", SHOWN + 0.1)
    asked.press("backspace", SHOWN + 0.2)
    asked.paste("ay", SHOWN + 0.3)
    asked.paste("o", SHOWN + 0.3 + ARM_SECONDS)  # armed: a paste is not an answer either

    assert not asked.confirming and asked.kept_text() == "ay"
    assert asked.press("d", SHOWN + 0.4 + ARM_SECONDS) == "deny"


def test_the_talk_docs_give_the_arming_delay_the_code_uses() -> None:
    from pathlib import Path

    docs = (Path(__file__).parents[2] / "docs" / "cli.md").read_text()
    assert f"on the screen for {ARM_SECONDS} s with no key pressed" in docs


def _request(command: str) -> PendingApproval:
    return PendingApproval(
        world="w", toolCallId="approval-1", chatId="c", agent="ops", toolName="shell_cmd",
        arguments=json.dumps({"command": command}), batchId="b", triggerSender="human",
        originalCallId="call-1", requestMessageId="m", message="", toolArgs={"command": command},
    )


def test_the_always_question_names_the_only_files_a_redirecting_line_may_write() -> None:
    means = always_means(_request("echo note >> notes.txt"))

    assert "`echo`" in means and "writing only to `notes.txt`" in means


def test_the_always_question_says_a_line_writing_files_unnamed_ways_writes_none() -> None:
    assert "writing no file" in always_means(_request("echo note > $TARGET"))
    assert "writing" not in always_means(_request("echo note"))

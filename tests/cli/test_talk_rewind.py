"""Which message ``/branch N``, ``/edit N`` and ``/undo`` name in ``talk``, the questions asked
before messages are removed, and how a change made to the chat is said (SPEC K1, K2)."""

from __future__ import annotations

from agentworld.cli.talk_question import ARM_SECONDS, CONFIRM_CHOICES, ApprovalQuestion
from agentworld.cli.talk_rewind import (
    Found,
    Refused,
    cut_note,
    edit_question,
    editable,
    last_persons,
    message_at,
    number_label,
    parse_number,
    removed_note,
    undo_question,
)
from agentworld.models import Message
from agentworld.models.events import CrudEvent


def chat() -> list[Message]:
    """#1 a person, #2 an agent, #3 a tool's result, #4 a person, #5 an agent."""
    return [
        Message(chat_id="c", role="user", sender="human", content="plan it"),
        Message(chat_id="c", role="assistant", sender="planner", content="@ops run it"),
        Message(chat_id="c", role="tool", sender="ops", tool_call_id="call_1", content="{}"),
        Message(chat_id="c", role="user", sender="ann", content="and then?"),
        Message(chat_id="c", role="assistant", sender="planner", content="done"),
    ]


def test_a_number_is_one_word_n_or_hash_n_from_one() -> None:
    assert [parse_number([w]) for w in ("3", "#3", "12", "#0", "0", "-1", "x", "3.0", "#", "٣")] == [
        3, 3, 12, None, None, None, None, None, None, None,
    ]  # fmt: skip
    assert parse_number([]) is None and parse_number(["1", "2"]) is None


def test_message_at_names_the_nth_message_of_the_transcript_counting_every_message() -> None:
    messages = chat()

    found = message_at(["#3"], messages, usage="/branch N")

    assert found == Found(3, messages[2]) and found.label == "#3"
    assert message_at(["5"], messages, usage="/branch N") == Found(5, messages[4])


def test_message_at_refuses_a_missing_number_a_number_past_the_end_and_an_empty_chat() -> None:
    messages = chat()

    assert message_at([], messages, usage="/edit N") == Refused(
        "usage: /edit N (N: the message's number, as /messages shows it)"
    )
    assert message_at(["6"], messages, usage="/edit N") == Refused(
        "there is no message #6: this chat has 5 (#1–#5; /messages shows them)"
    )
    assert message_at(["1"], [], usage="/edit N") == Refused("this chat has no messages yet")


def test_only_a_persons_message_is_editable_and_the_refusal_says_whose_it_is() -> None:
    messages = chat()

    assert editable(Found(4, messages[3])) == Found(4, messages[3])
    assert editable(Found(2, messages[1])) == Refused(
        "message #2 is planner's, not a person's: only a person's message is edited "
        "(/branch 2 starts another path from it)"
    )
    refused = editable(Found(3, messages[2]))
    assert isinstance(refused, Refused) and refused.reason.startswith("message #3 is a tool's result,")


def test_undo_names_the_last_persons_message_whoever_sent_it() -> None:
    messages = chat()

    assert last_persons(messages) == Found(4, messages[3])
    assert last_persons(messages[:3]) == Found(1, messages[0])
    assert last_persons(messages[1:3]) == Refused("no message of a person in this chat: nothing to undo")


def test_the_questions_say_what_goes_and_how_many_messages_follow() -> None:
    messages = chat()

    assert undo_question(Found(4, messages[3]), 5) == "remove #4 (ann's message) and the 1 message after it?"
    assert undo_question(Found(4, messages[3]), 4) == "remove #4 (ann's message)?"
    assert edit_question(Found(1, messages[0]), 5) == "replace #1 and remove the 4 messages after it?"
    assert removed_note(4, 2) == "✂ removed 2 messages (#4 on)"


def test_numbers_line_up_to_the_widest_one() -> None:
    assert [number_label(n, 120) for n in (1, 42, 120)] == ["#1  ", "#42 ", "#120"]
    assert number_label(7, 9) == "#7"


def removal(*, chat_id: str = "c", ids: int = 3, edited: bool) -> CrudEvent:
    return CrudEvent(world="w", operation="delete", entity="message", name="msg_0", chat_id=chat_id,
                     data={"messageIds": [f"msg_{i}" for i in range(ids)], "edited": edited})  # fmt: skip


def test_a_removal_elsewhere_is_said_with_how_many_went_and_why() -> None:
    assert cut_note(removal(edited=True), "c", here=False) == (
        "✂ 3 messages of this chat removed by another process (a message was edited there: the chat "
        "goes on from the new text); /messages shows it now"
    )
    assert cut_note(removal(ids=1, edited=False), "c", here=False) == (
        "✂ 1 message of this chat removed by another process (deleted from a message on); "
        "/messages shows it now"
    )
    assert cut_note(removal(chat_id="other", edited=True), "c", here=False) is None


def test_an_edit_here_is_said_from_its_event_and_an_undo_here_by_the_command() -> None:
    assert cut_note(removal(ids=4, edited=True), "c", here=True) == (
        "✎ edited: 4 messages removed (the old text and what followed it)"
    )
    assert cut_note(removal(edited=False), "c", here=True) is None


def test_a_branch_made_elsewhere_from_this_chat_is_said_and_other_chats_are_not() -> None:
    made = CrudEvent(world="w", operation="create", entity="chat", name="chat_b", chat_id="chat_b",
                     data={"branchOf": {"chatId": "c", "messageId": "msg_3"}})  # fmt: skip
    plain = CrudEvent(world="w", operation="create", entity="chat", name="chat_n", chat_id="chat_n")

    assert cut_note(made, "c", here=False) == (
        "⑂ chat chat_b was branched from this chat elsewhere (/switch chat_b goes there)"
    )
    assert cut_note(made, "c", here=True) is None  # /branch says it, and talk goes there
    assert cut_note(made, "other", here=False) is None
    assert cut_note(plain, "c", here=False) is None


def test_the_removal_question_answers_only_once_armed_and_enter_alone_says_no() -> None:
    asked = ApprovalQuestion(choices=CONFIRM_CHOICES, title="remove #4?", reading="the question")
    assert asked.press("y", 9.0) is None  # typed ahead: kept, answers nothing
    asked.shown(10.0)
    armed = 10.0 + ARM_SECONDS

    assert asked.press("y", 10.1) is None  # too soon: and the wait starts again
    assert "(keys ignored for a moment: read the question)" in "".join(t for _, t in asked.line(10.2))
    assert asked.kept_text() == "yy"
    assert asked.press("enter", 10.1 + ARM_SECONDS) == "no"
    assert "[n]o [y]es" in "".join(t for _, t in asked.line(armed + 1))
    assert asked.press("y", armed + 1) == "yes"

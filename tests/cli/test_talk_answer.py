"""An agent's question as ``talk`` asks it (SPEC F3, C4): what a typed line answers, what is
refused with a hint, how it is shown, and that nothing typed before it armed counts."""

from __future__ import annotations

from agentworld.cli.talk_answer import AskedQuestion, Picked, Refused
from agentworld.cli.talk_question import ARM_SECONDS

SHOWN = 50.0


def environments(*, free: bool = False) -> AskedQuestion:
    return AskedQuestion(agent="ops", question="Which environment?", options=("staging", "production"),
                         allow_free_text=free)  # fmt: skip


def test_a_number_picks_its_option_and_the_option_is_what_is_sent() -> None:
    asked = environments()

    assert asked.resolve("1") == Picked("staging")
    assert asked.resolve(" 2 ") == Picked("production")
    assert asked.resolve("Staging") == Picked("staging")  # its text, in any case, picks it too


def test_without_free_text_other_answers_and_numbers_out_of_range_are_refused_with_a_hint() -> None:
    asked = environments()

    assert asked.resolve("qa") == Refused("answer with one of the options: type 1–2 and press Enter")
    assert asked.resolve("3") == Refused("there is no option 3: type 1–2 and press Enter")
    assert asked.resolve("0") == Refused("there is no option 0: type 1–2 and press Enter")
    assert asked.resolve("  ") == Refused("an empty answer: type 1–2 and press Enter")


def test_with_free_text_a_typed_answer_is_taken_as_typed() -> None:
    asked = environments(free=True)

    assert asked.resolve("the qa cluster, please") == Picked("the qa cluster, please")
    assert asked.how() == "type 1–2 and press Enter, or type your own answer"
    open_question = AskedQuestion(agent="ops", question="Name?", allow_free_text=False)
    assert open_question.resolve("42") == Picked("42")  # no options: any text, digits too


def test_the_question_and_its_numbered_options_are_shown_with_controls_escaped() -> None:
    asked = AskedQuestion(agent="ops", question="Deploy\x1b[2K where?", options=("a\u202eb", "c"))

    assert asked.lines() == ["? ops asks: Deploy\\e[2K where?", "  1. a\\u202eb", "  2. c"]


def test_keys_before_the_question_armed_answer_nothing_and_are_kept() -> None:
    asked = environments()
    for key in "1":
        assert asked.early(key, SHOWN - 1)  # type-ahead, before it was shown
    asked.shown(SHOWN)
    assert asked.early("enter", SHOWN + 0.2)  # typing goes on as it appears: still early

    assert "keys ignored" in "".join(text for _, text in asked.prompt(SHOWN + 0.3))
    assert asked.kept_text() == "1"
    assert not asked.armed(SHOWN + 0.2 + ARM_SECONDS - 0.01)
    assert not asked.early("2", SHOWN + 0.2 + ARM_SECONDS)  # armed: this key is typing the answer
    assert "answer (type 1–2 and press Enter) ›" in "".join(t for _, t in asked.prompt(SHOWN + 2))

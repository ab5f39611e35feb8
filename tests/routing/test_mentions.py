"""Example tests for the mention rules of SPEC §2.2 (R1-R4, R6); every SPEC example is a case."""

from __future__ import annotations

import pytest

from agentworld.routing.mentions import (
    HUMAN_SENDERS,
    TURN_LIMIT_MARKER,
    WorldTag,
    WorldTagKind,
    add_auto_mention,
    apply_world_tags,
    extract_leading_mentions,
    extract_paragraph_mentions,
    finalize_reply,
    find_world_tag,
    is_human_sender,
    remove_self_mentions,
    should_agent_respond,
)
from agentworld.routing.messages import why_nobody_answers

AGENTS = ("a1", "a2", "a3")


def responders(sender: str, content: str, main_agent: str | None = None) -> set[str]:
    return {
        a
        for a in AGENTS
        if should_agent_respond(a, sender=sender, content=content, main_agent=main_agent)
    }


# --- is_human_sender -------------------------------------------------------------------------


@pytest.mark.parametrize("sender", ["human", "user", "you", "HUMAN", "User", " you ", "YoU"])
def test_human_senders(sender: str) -> None:
    assert is_human_sender(sender)


@pytest.mark.parametrize("sender", ["a1", "world", "system", "humans", "", "human-1"])
def test_non_human_senders(sender: str) -> None:
    assert not is_human_sender(sender)


def test_human_senders_constant() -> None:
    assert frozenset({"human", "user", "you"}) == HUMAN_SENDERS


# --- R1: extract_paragraph_mentions -----------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Hello everyone!\n   @a1, please respond.", ["a1"]),
        ("I think @a1 should handle this.", []),
        ("@a2 only you", ["a2"]),
        ("hello everyone", []),
        ("Hi all\n  @a1 please answer", ["a1"]),
        ("@a1, please respond.", ["a1"]),
        ("@a1 @a2 please", ["a1", "a2"]),
        ("@a1, @a2: do x", ["a1", "a2"]),
        ("@a1,@a2 do x", ["a1", "a2"]),
        ("@a1: @a2 do x", ["a1"]),  # ":" ends the block; @a2 is then mid-line
        ("@a1 and @a2", ["a1"]),
        ("@A1 hi\n@a1 again\n\t@B-2_x! go", ["a1", "b-2_x"]),
        ("@a1.", ["a1"]),
        ("@a1!", ["a1"]),
        ("mail me@x.com", []),
        ("me@x.com\n", []),
        ("@x.com is a domain", []),
        ("@José hello", []),
        ("@a1@a2 hi", []),
        ("@ a1", []),
        ("", []),
        ("line one\r\n  @a3 windows line", ["a3"]),
        ("@a2 first\n@a1 second\n@a2 again", ["a2", "a1"]),
    ],
)
def test_extract_paragraph_mentions(text: str, expected: list[str]) -> None:
    assert extract_paragraph_mentions(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("  @a1 @A2, hi", ["a1", "a2"]),
        ("@a\n@b\n\nbody", ["a", "b"]),
        ("hi\n@a1 there", []),
        ("I think @a1", []),
        ("", []),
    ],
)
def test_extract_leading_mentions(text: str, expected: list[str]) -> None:
    assert extract_leading_mentions(text) == expected


# --- R2/R4: should_agent_respond --------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("Hello everyone!\n   @a1, please respond.", {"a1"}),
        ("I think @a1 should handle this.", set()),
        ("@a2 only you", {"a2"}),
        ("hello everyone", {"a1", "a2", "a3"}),
        ("Hi all\n  @a1 please answer", {"a1"}),
        ("@a1, @a3: compare notes", {"a1", "a3"}),
        ("@nobody here?", set()),
        ("write to me@x.com please", {"a1", "a2", "a3"}),  # an e-mail is not a mention
    ],
)
@pytest.mark.parametrize("human", ["human", "user", "you", "HUMAN", "You"])
def test_human_messages(human: str, content: str, expected: set[str]) -> None:
    assert responders(human, content) == expected


def test_main_agent_takes_unaddressed_human_messages() -> None:
    assert responders("human", "hello everyone", main_agent="a2") == {"a2"}
    assert responders("human", "hello everyone", main_agent="A2") == {"a2"}


def test_main_agent_does_not_override_mentions() -> None:
    assert responders("human", "@a1 you please", main_agent="a2") == {"a1"}
    assert responders("human", "I think @a1 is right", main_agent="a2") == set()


def test_blank_main_agent_means_none() -> None:
    assert responders("human", "hello", main_agent="") == set(AGENTS)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("@a2 your turn", {"a2"}),
        ("hello everyone", set()),
        ("I think @a2 should handle this.", set()),
        ("Done.\n@a3 please review", {"a3"}),
        ("@A2, @a3: both of you", {"a2", "a3"}),
    ],
)
def test_agent_messages_need_paragraph_mentions(content: str, expected: set[str]) -> None:
    assert responders("a1", content) == expected - {"a1"}


def test_world_messages_always_answered() -> None:
    assert responders("world", "anything") == set(AGENTS)
    assert responders("World", "I think @a1") == set(AGENTS)
    assert responders("world", "@a1 only") == set(AGENTS)


def test_system_messages_never_answered() -> None:
    assert responders("system", "@a1 hello") == set()
    assert responders("SYSTEM", "hello everyone") == set()


@pytest.mark.parametrize("sender", ["a1", "A1", " a1 "])
def test_agent_never_answers_itself(sender: str) -> None:
    assert not should_agent_respond("a1", sender=sender, content="@a1 note to self")
    assert not should_agent_respond("A1", sender=sender, content="@a1 note to self")


def test_agent_names_case_insensitive() -> None:
    assert should_agent_respond("A1", sender="a2", content="@a1 hi")
    assert should_agent_respond("a1", sender="a2", content="@A1 hi")


@pytest.mark.parametrize("sender", ["human", "a2", "world"])
def test_turn_limit_messages_ignored(sender: str) -> None:
    content = f"@a1 {TURN_LIMIT_MARKER} (5 LLM calls). Please take control of the conversation."
    assert not should_agent_respond("a1", sender=sender, content=content)


def test_turn_limit_notice_to_human_reaches_nobody() -> None:
    notice = "@human Turn limit reached (5 LLM calls). Please take control of the conversation."
    assert responders("a1", notice) == set()


@pytest.mark.parametrize("sender", ["human", "a2", "world"])
def test_budget_notices_are_ignored_like_turn_limit_notices(sender: str) -> None:
    notice = "@a1 @human Budget reached ($0.012 of $0.01). Please take control of the conversation."
    assert not should_agent_respond("a1", sender=sender, content=notice)
    assert why_nobody_answers(notice, sender=sender, agents=["a1"]) == (
        "nobody answers: agents ignore messages that contain 'Budget reached'"
    )


# --- R3: self mentions and auto-mention -------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("@a1 hello", "hello"),
        ("@A1, hello", "hello"),
        ("@a1: @a1 hello", "hello"),
        ("@a1 @a2 over to you", "@a2 over to you"),
        ("@a2, @a1: do x", "@a2: do x"),
        ("@a1\n@a2\n\nbody", "@a2\n\nbody"),
        ("@a1", ""),
        ("@a2 hello", "@a2 hello"),
        ("  plain text", "  plain text"),
        ("I am @a1", "I am @a1"),
        ("@a12 not me", "@a12 not me"),
    ],
)
def test_remove_self_mentions(reply: str, expected: str) -> None:
    assert remove_self_mentions(reply, "a1") == expected


def test_auto_mention_agent_to_agent() -> None:
    assert add_auto_mention("Sure, done.", sender="a2", agent_name="a1") == "@a2 Sure, done."


@pytest.mark.parametrize("sender", ["human", "user", "you", "HUMAN", "world", "system", "a1", "A1"])
def test_no_auto_mention_for_humans_world_system_or_self(sender: str) -> None:
    assert add_auto_mention("Sure.", sender=sender, agent_name="a1") == "Sure."


@pytest.mark.parametrize(
    "reply",
    ["@a3 your turn", "@human I need help", "Thanks.\n@a3 please check", "@a2 already there"],
)
def test_no_auto_mention_when_reply_addresses_someone(reply: str) -> None:
    assert add_auto_mention(reply, sender="a2", agent_name="a1") == reply


def test_auto_mention_ignores_self_and_mid_text_mentions() -> None:
    assert add_auto_mention("ok\n@a1 note", sender="a2", agent_name="a1") == "@a2 ok\n@a1 note"
    assert add_auto_mention("ask @a3", sender="a2", agent_name="a1") == "@a2 ask @a3"


def test_auto_mention_edge_cases() -> None:
    assert add_auto_mention("   ", sender="a2", agent_name="a1") == "   "
    assert add_auto_mention("hi", sender="not a name", agent_name="a1") == "hi"
    once = add_auto_mention("hi", sender="a2", agent_name="a1")
    assert add_auto_mention(once, sender="a2", agent_name="a1") == once


# --- R6: world tags ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "tag"),
    [
        ("<world>STOP</world>", WorldTag("STOP")),
        ("x <world>done</world> y", WorldTag("DONE")),
        ("< world > Pass </ world >", WorldTag("PASS")),
        ("<world>TO: a, b</world>", WorldTag("TO", ("a", "b"))),
        ("<WORLD>to:@a,b, a</WORLD>", WorldTag("TO", ("a", "b"))),
        ("<world>TO:</world>", WorldTag("TO")),
        ("<world>GO</world>", None),
        ("no tag", None),
        ("<world>STOP</world> <world>TO: a</world>", WorldTag("STOP")),
    ],
)
def test_find_world_tag(reply: str, tag: WorldTag | None) -> None:
    assert find_world_tag(reply) == tag


@pytest.mark.parametrize("kind", ["STOP", "DONE", "PASS"])
def test_ending_tags_remove_leading_mentions(kind: WorldTagKind) -> None:
    reply = f"@a2, @a3 All finished.\n@human see above <world>{kind}</world>"
    text, tag = apply_world_tags(reply)
    assert tag == WorldTag(kind)
    assert text == "All finished.\nsee above"
    assert extract_paragraph_mentions(text) == []


def test_to_tag_replaces_leading_mentions() -> None:
    text, tag = apply_world_tags("@a2 Here is the plan. <world>TO: a3, a4</world>")
    assert tag == WorldTag("TO", ("a3", "a4"))
    assert text == "@a3\n@a4\n\nHere is the plan."
    assert extract_paragraph_mentions(text) == ["a3", "a4"]


def test_to_tag_without_recipients_only_removes_tag() -> None:
    assert apply_world_tags("@a2 hi <world>TO: </world>") == ("@a2 hi", WorldTag("TO"))


def test_apply_world_tags_without_tag_is_identity() -> None:
    assert apply_world_tags("  @a2 hi  ") == ("  @a2 hi  ", None)


# --- finalize_reply ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "sender", "expected"),
    [
        ("Sure.", "a2", "@a2 Sure."),
        ("Sure.", "human", "Sure."),
        ("@a1 Sure.", "a2", "@a2 Sure."),
        ("@a1 @a3 Sure.", "a2", "@a3 Sure."),
        ("@a3 over to you", "a2", "@a3 over to you"),
        ("Thanks! <world>STOP</world>", "a2", "Thanks!"),
        ("@a2 Thanks! <world>DONE</world>", "a2", "Thanks!"),
        ("<world>PASS</world>", "a2", ""),
        ("Plan ready <world>TO: a3</world>", "a2", "@a3\n\nPlan ready"),
        ("Plan <world>TO: a1, a3</world>", "a2", "@a3\n\nPlan"),
        ("Plan <world>TO: a1</world>", "a2", "Plan"),
        ("hi <world>TO:</world>", "a2", "@a2 hi"),
        (", @a1 odd start", "a2", "@a2 odd start"),
        ("@a1", "human", ""),
    ],
)
def test_finalize_reply(reply: str, sender: str, expected: str) -> None:
    assert finalize_reply(reply, agent_name="a1", sender=sender) == expected


def test_two_agents_auto_mention_each_other() -> None:
    """Agent-to-agent replies keep bouncing (R4's turn limit, not routing, stops the loop)."""
    reply = finalize_reply("my answer", agent_name="a1", sender="a2")
    assert should_agent_respond("a2", sender="a1", content=reply)
    back = finalize_reply("my answer back", agent_name="a2", sender="a1")
    assert should_agent_respond("a1", sender="a2", content=back)

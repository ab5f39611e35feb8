"""Property tests for the mention rules (SPEC §2.2)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from agentworld.routing.mentions import (
    HUMAN_SENDERS,
    add_auto_mention,
    extract_leading_mentions,
    extract_paragraph_mentions,
    finalize_reply,
    should_agent_respond,
)

names = st.from_regex(r"[A-Za-z0-9_-]{1,8}", fullmatch=True)
agent_names = names.filter(lambda n: n.lower() not in HUMAN_SENDERS | {"world", "system"})


def texts(pool: st.SearchStrategy[str] = names) -> st.SearchStrategy[str]:
    """Text rich in what matters to mentions: "@name", separators, punctuation, newlines, tags."""
    return st.lists(
        st.one_of(
            pool.map(lambda n: "@" + n),
            pool,
            st.sampled_from([" ", ", ", ": ", "\n", "\n  ", ".", "!", "@", "me@x.com", "<world>"]),
            st.sampled_from(
                ["<world>STOP</world>", "<world>TO: a1, b2</world>", "<world>pass</world>"]
            ),
            st.text(max_size=5),
        ),
        max_size=12,
    ).map("".join)


mention_text = texts()
# A word that cannot begin a mention, used to push mentions away from paragraph starts.
prefix_words = st.from_regex(r"[A-Za-z0-9.!?]{1,6}", fullmatch=True)


def swapcase_some(name: str, data: st.DataObject) -> str:
    flags = data.draw(st.lists(st.booleans(), min_size=len(name), max_size=len(name)))
    return "".join(c.swapcase() if f else c for c, f in zip(name, flags, strict=True))


@given(
    lines=st.lists(st.tuples(prefix_words, mention_text), min_size=1, max_size=5),
    agent=agent_names,
    sender=agent_names,
)
def test_mid_text_mentions_never_address_agents(
    lines: list[tuple[str, str]], agent: str, sender: str
) -> None:
    # Every line starts with a plain word; newlines inside the filler would start new paragraphs.
    text = "\n".join(f"{w} {rest.replace(chr(10), ' ')}" for w, rest in lines)
    text = "".join(" " if c in "\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029" else c for c in text)
    assert extract_paragraph_mentions(text) == []
    assert not should_agent_respond(agent, sender=sender, content=text)
    # A human who only talks *about* an agent (mid-text) addresses nobody, not everybody.
    assert not should_agent_respond(agent, sender="human", content=f"I think @{agent}\n{text}")


@given(text=mention_text)
def test_extracted_names_are_lowercase_and_present(text: str) -> None:
    for found in (extract_paragraph_mentions(text), extract_leading_mentions(text)):
        assert len(found) == len(set(found))
        for name in found:
            assert name == name.lower()
            assert "@" + name in text.lower()
    assert set(extract_leading_mentions(text)) <= set(extract_paragraph_mentions(text))


@given(reply=mention_text, sender=st.one_of(agent_names, st.sampled_from(["human", "world"])))
def test_auto_mention_idempotent(reply: str, sender: str) -> None:
    once = add_auto_mention(reply, sender=sender, agent_name="me")
    assert add_auto_mention(once, sender=sender, agent_name="me") == once


@given(reply=mention_text, sender=agent_names)
def test_auto_mention_never_for_humans(reply: str, sender: str) -> None:
    for human in HUMAN_SENDERS:
        assert add_auto_mention(reply, sender=human.upper(), agent_name=sender) == reply


@given(data=st.data(), agent=names, sender=st.one_of(names, st.text(max_size=6)))
def test_finalize_never_starts_with_self_mention(
    data: st.DataObject, agent: str, sender: str
) -> None:
    # Mix the agent's own name (in any case) into the reply so self-mentions are common.
    own = st.sampled_from([agent, agent.upper(), agent.lower()])
    reply = data.draw(texts(st.one_of(own, names)))
    # The prefixes cover the awkward starts: a self-mention first, or glued behind a comma that an
    # auto-mention would turn into a mention block.
    for prefix in ("", f"@{agent.upper()} ", f", @{agent} ", ","):
        out = finalize_reply(prefix + reply, agent_name=agent, sender=sender)
        assert agent.lower() not in extract_leading_mentions(out)


@given(reply=mention_text, agent=agent_names, sender=agent_names)
def test_finalized_agent_reply_addresses_someone_unless_ended(
    reply: str, agent: str, sender: str
) -> None:
    out = finalize_reply(reply, agent_name=agent, sender=sender)
    ended = any(t in reply.lower() for t in ("<world>stop", "<world>pass", "<world>to: a1"))
    if out.strip() and not ended and sender.lower() != agent.lower():
        assert any(n != agent.lower() for n in extract_paragraph_mentions(out))


@given(
    data=st.data(),
    agent=agent_names,
    sender=st.one_of(agent_names, st.sampled_from(["human", "User", "world", "system"])),
    content=mention_text,
    main=st.one_of(st.none(), agent_names),
)
def test_should_agent_respond_case_insensitive(
    data: st.DataObject, agent: str, sender: str, content: str, main: str | None
) -> None:
    expected = should_agent_respond(agent, sender=sender, content=content, main_agent=main)
    agent2 = swapcase_some(agent, data)
    sender2 = swapcase_some(sender, data)
    main2 = None if main is None else swapcase_some(main, data)
    content2 = content.replace(f"@{agent}", f"@{swapcase_some(agent, data)}")
    assert should_agent_respond(agent2, sender=sender2, content=content2, main_agent=main2) == (
        expected
    )


@given(agent=agent_names, sender=agent_names, content=mention_text)
def test_paragraph_mention_addresses_agent(agent: str, sender: str, content: str) -> None:
    if sender.lower() == agent.lower() or "Turn limit reached" in content or "Budget reached" in content:
        return
    assert should_agent_respond(agent, sender=sender, content=f"{content}\n  @{agent} go")
    assert should_agent_respond(agent, sender="human", content=f"{content}\n@{agent.upper()}, go")

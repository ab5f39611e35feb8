"""The records the logs and the status read back (``models.records``)."""

from __future__ import annotations

import dataclasses

import pytest

from agentworld.models.records import ChatActivity, ChatState


def activity(*, queued: int = 0, runner: str | None = None, approvals: int = 0, calls: int = 0) -> ChatActivity:
    return ChatActivity(
        chat_id="c1", name="A chat", queued_items=queued, runner=runner,
        pending_approvals=approvals, pending_tool_calls=calls,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("chat", "state"),
    [
        (activity(queued=2, runner="host:1:2", approvals=1), "running"),
        (activity(queued=1, approvals=1), "queued"),
        (activity(approvals=1), "waiting"),
        (activity(calls=1), "waiting"),
        (activity(), "idle"),
    ],
)
def test_a_chats_state_is_the_busiest_thing_it_does(chat: ChatActivity, state: ChatState) -> None:
    assert chat.state == state


def test_records_are_values_that_cannot_be_changed() -> None:
    chat = activity()
    with pytest.raises(dataclasses.FrozenInstanceError):
        chat.queued_items = 3  # type: ignore[misc]
    assert chat == activity()

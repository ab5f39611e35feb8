"""Per-chat FIFO queues (SPEC O4): one item at a time per chat, chats side by side, and one
meaning of "idle" — nothing queued and nothing running."""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from collections.abc import AsyncIterator

import pytest

from agentworld.runtime.queues import ChatQueues

WAIT = 5.0  # seconds; only reached when a queue is broken


class Recorder:
    """Real callbacks that record what the queue did with each item."""

    def __init__(self) -> None:
        self.done: list[tuple[str, str]] = []
        self.errors: list[tuple[str, str, str]] = []
        self.drained: list[str] = []
        self.gates: dict[str, asyncio.Event] = {}
        self.releases: dict[str, asyncio.Event] = {}
        """Finishing the key item sets the event (lets one chat unblock another)."""
        self.running: defaultdict[str, int] = defaultdict(int)
        self.most_at_once: defaultdict[str, int] = defaultdict(int)

    def gate(self, item: str) -> asyncio.Event:
        """Processing ``item`` waits until the returned event is set."""
        return self.gates.setdefault(item, asyncio.Event())

    async def process(self, chat_id: str, item: str) -> None:
        self.running[chat_id] += 1
        self.most_at_once[chat_id] = max(self.most_at_once[chat_id], self.running[chat_id])
        try:
            await asyncio.sleep(0)  # let anything else that could run, run
            if item in self.gates:
                await self.gates[item].wait()
            if item.startswith("fail"):
                raise ValueError(f"cannot do {item}")
            self.done.append((chat_id, item))
            if item in self.releases:
                self.releases[item].set()
        finally:
            self.running[chat_id] -= 1

    async def on_error(self, chat_id: str, item: str, exc: Exception) -> None:
        self.errors.append((chat_id, item, str(exc)))

    async def on_drained(self, chat_id: str) -> None:
        self.drained.append(chat_id)


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
async def queues(recorder: Recorder) -> AsyncIterator[ChatQueues[str]]:
    chat_queues: ChatQueues[str] = ChatQueues(
        recorder.process, on_error=recorder.on_error, on_drained=recorder.on_drained
    )
    yield chat_queues
    await chat_queues.aclose()


async def test_items_of_one_chat_run_in_the_order_they_were_put_one_at_a_time(
    queues: ChatQueues[str], recorder: Recorder
) -> None:
    for n in range(5):
        queues.put("c1", f"item{n}")

    await asyncio.wait_for(queues.wait_idle("c1"), WAIT)

    assert recorder.done == [("c1", f"item{n}") for n in range(5)]
    assert recorder.most_at_once["c1"] == 1


async def test_different_chats_run_side_by_side(
    queues: ChatQueues[str], recorder: Recorder
) -> None:
    recorder.releases["b-first"] = recorder.gate("a-waits-for-b")
    queues.put("a", "a-waits-for-b")
    queues.put("b", "b-first")

    # If chat b waited behind chat a, a would never be released.
    await asyncio.wait_for(queues.wait_idle(), WAIT)

    assert recorder.done == [("b", "b-first"), ("a", "a-waits-for-b")]


async def test_work_put_while_a_chat_is_busy_runs_after_the_current_item(
    queues: ChatQueues[str], recorder: Recorder
) -> None:
    gate = recorder.gate("first")
    queues.put("c1", "first")
    await asyncio.sleep(0.01)  # "first" is now running
    queues.put("c1", "second")
    queues.put("c1", "third")
    gate.set()

    await asyncio.wait_for(queues.wait_idle("c1"), WAIT)

    assert [item for _, item in recorder.done] == ["first", "second", "third"]
    assert recorder.most_at_once["c1"] == 1


async def test_a_chat_nobody_used_is_idle_and_waiting_for_it_returns_at_once(
    queues: ChatQueues[str],
) -> None:
    assert queues.is_idle("never-used")
    assert queues.is_idle()
    await asyncio.wait_for(queues.wait_idle("never-used"), WAIT)
    await asyncio.wait_for(queues.wait_idle(), WAIT)


async def test_a_chat_is_busy_while_work_is_queued_or_running_and_idle_after(
    queues: ChatQueues[str], recorder: Recorder
) -> None:
    gate = recorder.gate("slow")
    queues.put("c1", "slow")

    assert not queues.is_idle("c1")
    assert not queues.is_idle()
    await asyncio.sleep(0.01)  # the item is being processed now
    assert not queues.is_idle("c1")
    assert queues.is_idle("c2")

    gate.set()
    await asyncio.wait_for(queues.wait_idle("c1"), WAIT)

    assert queues.is_idle("c1")
    assert queues.is_idle()


async def test_one_idle_chat_does_not_make_the_whole_world_idle(
    queues: ChatQueues[str], recorder: Recorder
) -> None:
    gate = recorder.gate("long")
    queues.put("busy", "long")
    queues.put("quick", "short")

    await asyncio.wait_for(queues.wait_idle("quick"), WAIT)

    assert queues.is_idle("quick")
    assert not queues.is_idle("busy")
    assert not queues.is_idle()
    gate.set()
    await asyncio.wait_for(queues.wait_idle(), WAIT)
    assert queues.is_idle("busy") and queues.is_idle()


async def test_a_failing_item_is_reported_and_the_chat_goes_on(
    queues: ChatQueues[str], recorder: Recorder
) -> None:
    queues.put("c1", "before")
    queues.put("c1", "fail-this")
    queues.put("c1", "after")

    await asyncio.wait_for(queues.wait_idle("c1"), WAIT)

    assert recorder.errors == [("c1", "fail-this", "cannot do fail-this")]
    assert recorder.done == [("c1", "before"), ("c1", "after")]
    assert queues.is_idle("c1")


async def test_a_failing_error_report_is_logged_and_the_chat_goes_on(
    recorder: Recorder, caplog: pytest.LogCaptureFixture
) -> None:
    async def broken_report(chat_id: str, item: str, exc: Exception) -> None:
        raise RuntimeError("the reporter is down")

    chat_queues: ChatQueues[str] = ChatQueues(recorder.process, on_error=broken_report)
    try:
        with caplog.at_level(logging.ERROR, logger="agentworld.runtime"):
            chat_queues.put("c1", "fail-this")
            chat_queues.put("c1", "after")
            await asyncio.wait_for(chat_queues.wait_idle(), WAIT)
    finally:
        await chat_queues.aclose()

    assert recorder.done == [("c1", "after")]
    assert any("error reporting failed for chat c1" in r.getMessage() for r in caplog.records)
    assert chat_queues.is_idle("c1")


async def test_the_drain_hook_runs_once_per_burst_of_work(
    queues: ChatQueues[str], recorder: Recorder
) -> None:
    queues.put("c1", "one")
    queues.put("c1", "two")
    await asyncio.wait_for(queues.wait_idle("c1"), WAIT)
    assert recorder.drained == ["c1"]

    queues.put("c1", "three")
    await asyncio.wait_for(queues.wait_idle("c1"), WAIT)

    assert recorder.drained == ["c1", "c1"]
    assert [item for _, item in recorder.done] == ["one", "two", "three"]


async def test_work_the_drain_hook_queues_runs_before_the_chat_is_idle(
    recorder: Recorder,
) -> None:
    seen_idle_during_hook: list[bool] = []
    chat_queues: ChatQueues[str]

    async def follow_up(chat_id: str) -> None:
        recorder.drained.append(chat_id)
        seen_idle_during_hook.append(chat_queues.is_idle(chat_id))
        if len(recorder.drained) == 1:
            chat_queues.put(chat_id, "follow-up")

    chat_queues = ChatQueues(recorder.process, on_error=recorder.on_error, on_drained=follow_up)
    try:
        chat_queues.put("c1", "first")
        await asyncio.wait_for(chat_queues.wait_idle("c1"), WAIT)
        assert [item for _, item in recorder.done] == ["first", "follow-up"]
        assert recorder.drained == ["c1", "c1"]
        assert seen_idle_during_hook == [False, False]
    finally:
        await chat_queues.aclose()


async def test_a_failing_drain_hook_is_logged_and_the_chat_still_becomes_idle(
    recorder: Recorder, caplog: pytest.LogCaptureFixture
) -> None:
    async def broken_hook(chat_id: str) -> None:
        raise RuntimeError("no title today")

    chat_queues: ChatQueues[str] = ChatQueues(
        recorder.process, on_error=recorder.on_error, on_drained=broken_hook
    )
    try:
        with caplog.at_level(logging.ERROR, logger="agentworld.runtime"):
            chat_queues.put("c1", "work")
            await asyncio.wait_for(chat_queues.wait_idle(), WAIT)
        assert chat_queues.is_idle("c1") and chat_queues.is_idle()
        chat_queues.put("c1", "more")  # the chat still takes work afterwards
        await asyncio.wait_for(chat_queues.wait_idle(), WAIT)
    finally:
        await chat_queues.aclose()

    assert recorder.done == [("c1", "work"), ("c1", "more")]
    assert any("after-drain hook failed for chat c1" in r.getMessage() for r in caplog.records)


async def test_close_cancels_running_work_and_refuses_new_work(
    recorder: Recorder,
) -> None:
    cancelled = asyncio.Event()

    async def endless(chat_id: str, item: str) -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    chat_queues: ChatQueues[str] = ChatQueues(endless, on_error=recorder.on_error)
    chat_queues.put("c1", "forever")
    chat_queues.put("c2", "forever")
    await asyncio.sleep(0.01)

    await asyncio.wait_for(chat_queues.aclose(), WAIT)

    assert cancelled.is_set()
    assert chat_queues.is_idle("c1") and chat_queues.is_idle("c2") and chat_queues.is_idle()
    assert recorder.errors == []  # a cancellation is not an error of the item
    with pytest.raises(RuntimeError, match="closed"):
        chat_queues.put("c1", "late")

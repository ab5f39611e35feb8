"""The event bus: ordered delivery, filtering, and failures that are reported, never swallowed (SPEC E1)."""

from __future__ import annotations

import asyncio
import logging

import pytest

from agentworld.events import EventBus, Handler
from agentworld.models import Message
from agentworld.models.events import (
    CrudEvent,
    MessageEvent,
    SystemEvent,
    ToolEvent,
    WorldEvent,
)


def message_event(content: str = "hi", *, chat: str = "c1") -> MessageEvent:
    return MessageEvent(
        world="lab", message=Message(chat_id=chat, role="user", sender="human", content=content)
    )


def tool_event() -> ToolEvent:
    return ToolEvent(
        world="lab",
        phase="start",
        chat_id="c1",
        agent="alice",
        tool_call_id="call_1",
        tool_name="shell",
    )


def crud_event() -> CrudEvent:
    return CrudEvent(world="lab", operation="create", entity="agent", name="bob")


class Recorder:
    """A subscriber that records (its name, the event) into a shared log."""

    def __init__(self, log: list[tuple[str, WorldEvent]], name: str) -> None:
        self.log = log
        self.name = name

    def __call__(self, event: WorldEvent) -> None:
        self.log.append((self.name, event))


class AsyncRecorder:
    """The same, as a coroutine subscriber."""

    def __init__(self, log: list[tuple[str, WorldEvent]], name: str) -> None:
        self.log = log
        self.name = name

    async def __call__(self, event: WorldEvent) -> None:
        await asyncio.sleep(0)  # really suspend, so ordering cannot come from luck
        self.log.append((self.name, event))


def system_events(log: list[tuple[str, WorldEvent]], name: str) -> list[SystemEvent]:
    return [e for n, e in log if n == name and isinstance(e, SystemEvent)]


# -- delivery ------------------------------------------------------------------


async def test_sync_and_async_subscribers_run_in_subscription_order() -> None:
    bus = EventBus("lab")
    log: list[tuple[str, WorldEvent]] = []
    bus.subscribe(AsyncRecorder(log, "first-async"))
    bus.subscribe(Recorder(log, "second-sync"))
    bus.subscribe(AsyncRecorder(log, "third-async"))
    bus.subscribe(Recorder(log, "fourth-sync"))
    one, two = message_event("one"), message_event("two")

    await bus.publish(one)
    await bus.publish(two)

    names = ["first-async", "second-sync", "third-async", "fourth-sync"]
    assert log == [(n, one) for n in names] + [(n, two) for n in names]


async def test_publish_waits_for_async_subscribers() -> None:
    bus = EventBus("lab")
    finished: list[str] = []

    async def slow(event: WorldEvent) -> None:
        for _ in range(3):
            await asyncio.sleep(0)
        finished.append(event.event_id)

    bus.subscribe(slow)
    event = message_event()

    await bus.publish(event)

    assert finished == [event.event_id]


async def test_kinds_filter_what_a_subscriber_receives() -> None:
    bus = EventBus("lab")
    log: list[tuple[str, WorldEvent]] = []
    bus.subscribe(Recorder(log, "messages"), kinds=["message"])
    bus.subscribe(AsyncRecorder(log, "tools-and-crud"), kinds=["tool", "crud"])
    bus.subscribe(Recorder(log, "everything"))
    message, tool, crud = message_event(), tool_event(), crud_event()

    for event in (message, tool, crud):
        await bus.publish(event)

    assert [e for n, e in log if n == "messages"] == [message]
    assert [e for n, e in log if n == "tools-and-crud"] == [tool, crud]
    assert [e for n, e in log if n == "everything"] == [message, tool, crud]


async def test_empty_kinds_receives_nothing() -> None:
    bus = EventBus("lab")
    log: list[tuple[str, WorldEvent]] = []
    bus.subscribe(Recorder(log, "nothing"), kinds=[])

    await bus.publish(message_event())

    assert log == []


async def test_unsubscribe_stops_delivery_to_that_subscriber_only() -> None:
    bus = EventBus("lab")
    log: list[tuple[str, WorldEvent]] = []
    unsubscribe_a = bus.subscribe(Recorder(log, "a"))
    bus.subscribe(AsyncRecorder(log, "b"))
    before, after = message_event("before"), message_event("after")

    await bus.publish(before)
    unsubscribe_a()
    unsubscribe_a()  # a second call is harmless
    await bus.publish(after)

    assert log == [("a", before), ("b", before), ("b", after)]


async def test_a_chat_subscriber_hears_its_chat_and_the_world_in_subscription_order() -> None:
    bus = EventBus("lab")
    log: list[tuple[str, WorldEvent]] = []
    bus.subscribe(Recorder(log, "all-first"))
    bus.subscribe(AsyncRecorder(log, "c1"), chat="c1")
    bus.subscribe(Recorder(log, "c2"), chat="c2")
    bus.subscribe(Recorder(log, "all-last"))
    bus.subscribe(Recorder(log, "c1-tools"), chat="c1", kinds=["tool"])
    in_c1, in_c2, world_wide, tool = (
        message_event("one", chat="c1"),
        message_event("two", chat="c2"),
        crud_event(),
        tool_event(),
    )

    for event in (in_c1, in_c2, world_wide, tool):
        await bus.publish(event)

    assert log == [
        ("all-first", in_c1), ("c1", in_c1), ("all-last", in_c1),
        ("all-first", in_c2), ("c2", in_c2), ("all-last", in_c2),
        ("all-first", world_wide), ("c1", world_wide), ("c2", world_wide), ("all-last", world_wide),
        ("all-first", tool), ("c1", tool), ("all-last", tool), ("c1-tools", tool),
    ]  # fmt: skip


async def test_unsubscribing_a_chat_subscriber_leaves_the_chats_others() -> None:
    bus = EventBus("lab")
    log: list[tuple[str, WorldEvent]] = []
    first = bus.subscribe(Recorder(log, "first"), chat="c1")
    second = bus.subscribe(Recorder(log, "second"), chat="c1")
    before, middle, after = (message_event(text, chat="c1") for text in ("a", "b", "c"))

    await bus.publish(before)
    first()
    await bus.publish(middle)
    second()
    second()  # harmless
    third = bus.subscribe(Recorder(log, "third"), chat="c1")  # the chat anew
    first()  # an old unsubscribe does not touch the new subscriber
    await bus.publish(after)
    third()

    assert log == [
        ("first", before), ("second", before), ("second", middle), ("third", after)
    ]


async def test_same_handler_subscribed_twice_is_unsubscribed_once_at_a_time() -> None:
    bus = EventBus("lab")
    log: list[tuple[str, WorldEvent]] = []
    handler = Recorder(log, "twice")
    first = bus.subscribe(handler)
    bus.subscribe(handler)

    first()
    await bus.publish(message_event())

    assert len(log) == 1


async def test_subscriber_may_unsubscribe_itself_while_handling() -> None:
    bus = EventBus("lab")
    log: list[tuple[str, WorldEvent]] = []
    unsubscribe = None

    def once(event: WorldEvent) -> None:
        log.append(("once", event))
        assert unsubscribe is not None
        unsubscribe()

    unsubscribe = bus.subscribe(once)
    bus.subscribe(Recorder(log, "later"))
    first, second = message_event("1"), message_event("2")

    await bus.publish(first)
    await bus.publish(second)

    assert log == [("once", first), ("later", first), ("later", second)]


# -- failures ------------------------------------------------------------------


def failing_sync(event: WorldEvent) -> None:
    raise RuntimeError(f"sync handler broke on {event.kind}")


async def failing_async(event: WorldEvent) -> None:
    raise ValueError(f"async handler broke on {event.kind}")


@pytest.mark.parametrize(
    ("handler", "error_type"), [(failing_sync, "RuntimeError"), (failing_async, "ValueError")]
)
async def test_failing_subscriber_does_not_stop_later_ones_and_is_reported(
    caplog: pytest.LogCaptureFixture, handler: Handler, error_type: str
) -> None:
    bus = EventBus("lab")
    log: list[tuple[str, WorldEvent]] = []
    bus.subscribe(Recorder(log, "before"), kinds=["message"])
    bus.subscribe(handler, kinds=["message"], name="flaky-subscriber")
    bus.subscribe(AsyncRecorder(log, "after"))
    event = message_event()

    with caplog.at_level(logging.ERROR, logger="agentworld.events"):
        await bus.publish(event)

    assert ("before", event) in log
    assert ("after", event) in log
    [report] = system_events(log, "after")
    assert report.level == "error"
    assert report.world == "lab"
    assert report.chat_id == "c1"
    assert "flaky-subscriber" in report.text
    assert "broke on message" in report.text
    assert report.context["event_kind"] == "message"
    assert report.context["event_id"] == event.event_id
    assert report.context["subscriber"] == "flaky-subscriber"
    assert report.context["error_type"] == error_type

    [record] = [r for r in caplog.records if r.name == "agentworld.events"]
    assert record.levelno == logging.ERROR
    assert "flaky-subscriber" in record.getMessage()
    assert event.event_id in record.getMessage()
    assert record.exc_info is not None and record.exc_info[1] is not None
    assert type(record.exc_info[1]).__name__ == error_type


async def test_subscriber_name_defaults_to_the_function_name(
    caplog: pytest.LogCaptureFixture,
) -> None:
    bus = EventBus("lab")
    log: list[tuple[str, WorldEvent]] = []
    bus.subscribe(failing_sync, kinds=["message"])
    bus.subscribe(Recorder(log, "watcher"), kinds=["system"])

    with caplog.at_level(logging.ERROR, logger="agentworld.events"):
        await bus.publish(message_event())

    [report] = system_events(log, "watcher")
    assert "failing_sync" in report.text
    assert "failing_sync" in caplog.text


async def test_subscriber_failing_on_every_event_does_not_recurse(
    caplog: pytest.LogCaptureFixture,
) -> None:
    bus = EventBus("lab")
    log: list[tuple[str, WorldEvent]] = []
    calls: list[str] = []

    async def always_fails(event: WorldEvent) -> None:
        calls.append(event.kind)
        raise RuntimeError("always")

    bus.subscribe(always_fails, name="always-fails")
    bus.subscribe(Recorder(log, "watcher"))
    event = message_event()

    with caplog.at_level(logging.ERROR, logger="agentworld.events"):
        await bus.publish(event)

    # It failed on the message, then on the system event reporting that failure; there it stops.
    assert calls == ["message", "system"]
    assert len(system_events(log, "watcher")) == 1
    assert ("watcher", event) in log
    errors = [r for r in caplog.records if r.name == "agentworld.events"]
    assert len(errors) == 2
    assert all("always-fails" in r.getMessage() for r in errors)


async def test_subscriber_failing_only_on_system_events_does_not_recurse(
    caplog: pytest.LogCaptureFixture,
) -> None:
    bus = EventBus("lab")
    log: list[tuple[str, WorldEvent]] = []
    bus.subscribe(failing_sync, kinds=["system"], name="system-hater")
    bus.subscribe(Recorder(log, "watcher"), kinds=["system"])
    original = SystemEvent(world="lab", level="warning", text="provider slow")

    with caplog.at_level(logging.ERROR, logger="agentworld.events"):
        await bus.publish(original)

    reports = system_events(log, "watcher")
    assert original in reports
    [failure_report] = [r for r in reports if r != original]
    assert failure_report.context["subscriber"] == "system-hater"
    assert failure_report.context["event_id"] == original.event_id
    assert failure_report.context["event_kind"] == "system"
    assert len([r for r in caplog.records if r.name == "agentworld.events"]) == 2


async def test_two_failing_subscribers_are_each_reported(
    caplog: pytest.LogCaptureFixture,
) -> None:
    bus = EventBus("lab")
    log: list[tuple[str, WorldEvent]] = []
    bus.subscribe(failing_sync, kinds=["message"], name="first-broken")
    bus.subscribe(failing_async, kinds=["message"], name="second-broken")
    bus.subscribe(Recorder(log, "watcher"))
    event = message_event()

    with caplog.at_level(logging.ERROR, logger="agentworld.events"):
        await bus.publish(event)

    reports = system_events(log, "watcher")
    assert sorted(r.context["subscriber"] for r in reports) == ["first-broken", "second-broken"]
    assert all(r.context["event_id"] == event.event_id for r in reports)
    assert ("watcher", event) in log

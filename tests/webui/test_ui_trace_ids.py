"""With traces on in the server, the web UI keeps each answer's trace id: the sender's tooltip
names it and the message element carries it, the id of the trace the collector received."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

import pytest
from playwright.sync_api import Page, expect

from agentworld.testing.openai_wire import OpenAIWireServer, Reply
from agentworld.testing.otlp import OtlpReceiver
from conftest import Script, Served, serving


@pytest.fixture(scope="module")
def receiver() -> Iterator[OtlpReceiver]:
    with OtlpReceiver() as running:
        yield running


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, receiver: OtlpReceiver) -> Iterator[Served]:
    """This module's server, sending its spans to ``receiver``."""
    with pytest.MonkeyPatch.context() as patch:
        for name, value in receiver.env().items():
            patch.setenv(name, value)
        with serving(tmp_path_factory.mktemp("webui-traces")) as server:
            yield server


@pytest.mark.parametrize("streaming", [True, False], ids=["streamed", "not-streamed"])
def test_an_answer_shows_the_id_of_its_trace(
    served: Served, llm: OpenAIWireServer, script: Script, receiver: OtlpReceiver,
    open_page: Callable[..., Page], world_name: str, streaming: bool,
) -> None:
    script.by_agent[f"{world_name}/helper"] = lambda body: Reply.text("Traced hello!")
    chat = served.make_world(world_name, llm, "helper", streaming=streaming)
    page = open_page(served.chat_url(world_name, chat))
    page.get_by_test_id("composer-input").fill("@helper hi")
    page.get_by_test_id("composer-input").press("Enter")

    answer = page.locator("[data-testid=message][data-sender=helper]")
    expect(answer.get_by_test_id("message-body")).to_have_text("Traced hello!")
    expect(answer).to_have_attribute("data-trace-id", re.compile(r"^[0-9a-f]{32}$"))
    trace_id = answer.get_attribute("data-trace-id")
    spans = receiver.wait_for(
        lambda s: any(x.name == "chat m" and x.trace_id == trace_id for x in s), "the answer's model call"
    )
    (posted,) = [s for s in spans if s.name == "post_message" and s.trace_id == trace_id]
    assert posted["gen_ai.conversation.id"] == chat
    expect(answer.get_by_test_id("message-sender")).to_have_attribute("title", f"trace {trace_id}")
    human = page.locator("[data-testid=message][data-sender=human]")
    expect(human).not_to_have_attribute("data-trace-id", re.compile(".*"))

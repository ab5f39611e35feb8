"""A turn sent by the CLI with ``OTEL_EXPORTER_OTLP_ENDPOINT`` set is one trace at a loopback
OTLP receiver: the message posted, the agent's turn, its model call with the GenAI
attributes, the storage commits; the events carry its id; content only when asked for, redacted."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from agentworld.testing.openai_wire import OpenAIWireServer, Reply
from agentworld.testing.otlp import OtlpReceiver, only


def _world(cli: Any, server: OpenAIWireServer) -> None:
    cli("world", "create", "w")
    cli(
        "agent", "create", "w", "a1", "--provider", "openai", "--model", "m",
        "--base-url", server.base_url, "--system-prompt", "agent:a1",
    )


def test_a_sent_turn_is_one_trace_of_the_post_the_agent_turn_and_its_model_call(
    cli: Any, script: Any, server: OpenAIWireServer, receiver: OtlpReceiver, db_url: str
) -> None:
    script.by_agent["a1"] = lambda body: Reply.text("@human hi there", prompt_tokens=11, completion_tokens=7)
    _world(cli, server)
    sent = cli("send", "w", "@a1 hello", "--json", env=receiver.env()).json()

    spans = receiver.wait_for(lambda s: any(x.name == "chat m" for x in s), "the model call span")
    post, turn, model = only(spans, "post_message"), only(spans, "invoke_agent a1"), only(spans, "chat m")
    assert {s.trace_id for s in spans} == {post.trace_id}
    assert {s.service for s in spans} == {"agentworld"}
    assert post.parent_span_id is None
    assert turn.parent_span_id == post.span_id
    assert model.parent_span_id == turn.span_id
    assert turn.attributes == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "a1",
        "gen_ai.conversation.id": sent["chatId"],
        "agentworld.work.kind": "loop",
    }
    (answer,) = [m for m in sent["messages"] if m["role"] == "assistant"]
    assert model.attributes == {
        "gen_ai.operation.name": "chat",
        "gen_ai.system": "openai",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "m",
        "gen_ai.response.model": "m",
        "gen_ai.agent.name": "a1",
        "gen_ai.usage.input_tokens": 11,
        "gen_ai.usage.output_tokens": 7,
        "gen_ai.response.finish_reasons": ("stop",),
    }
    assert turn.start_ns <= model.start_ns <= model.end_ns <= turn.end_ns
    commits = [s for s in spans if s.name == "storage.commit_step"]
    assert commits and {s.parent_span_id for s in commits} <= {post.span_id, turn.span_id}
    assert any(s.parent_span_id == turn.span_id for s in commits)

    # The event log carries the trace id on the model call's events, for the web UI to link.
    path = db_url.removeprefix("sqlite:///")
    with sqlite3.connect(path) as conn:
        payloads = [json.loads(p) for (p,) in conn.execute("SELECT payload FROM events WHERE kind = 'sse'")]
    assert [(p["phase"], p["traceId"]) for p in payloads] == [("start", post.trace_id), ("end", post.trace_id)]
    assert {p["messageId"] for p in payloads} == {answer["messageId"]}
    with sqlite3.connect(path) as conn:
        logged = dict(conn.execute("SELECT message_id, payload FROM events WHERE kind = 'message'").fetchall())
    assert {k: json.loads(v) for k, v in logged.items()} == {
        sent["messages"][0]["messageId"]: {},  # the person's message: posted before the trace's first span ended
        answer["messageId"]: {"traceId": post.trace_id},
    }

def test_message_content_is_captured_only_when_asked_and_then_redacted(
    cli: Any, server: OpenAIWireServer, receiver: OtlpReceiver
) -> None:
    _world(cli, server)
    secret = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789"
    cli("send", "w", "@a1 plain words", env=receiver.env())
    cli(
        "send", "w", f"@a1 my key is {secret}",
        env=receiver.env(OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT="true"),
    )

    spans = receiver.wait_for(lambda s: len([x for x in s if x.name == "chat m"]) == 2, "two model calls")
    first, second = sorted((s for s in spans if s.name == "chat m"), key=lambda s: s.start_ns)
    assert "gen_ai.input.messages" not in first.attributes
    assert "gen_ai.output.messages" not in first.attributes
    prompt = json.loads(second["gen_ai.input.messages"])
    assert prompt[0] == {"role": "system", "parts": [{"type": "text", "content": "agent:a1"}]}
    said = prompt[-1]["parts"][0]["content"]
    assert said.startswith("@a1 my key is [REDACTED")
    assert secret not in second["gen_ai.input.messages"]
    assert secret not in second["gen_ai.output.messages"]
    (output,) = json.loads(second["gen_ai.output.messages"])
    assert output["role"] == "assistant" and output["finish_reason"] == "stop"
    assert output["parts"][0]["type"] == "text"

"""Without an OTLP endpoint (or with ``OTEL_SDK_DISABLED=true``) a ``send`` exports no span and
never imports OpenTelemetry; with one it does both."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentworld.testing.openai_wire import OpenAIWireServer
from agentworld.testing.otlp import OtlpReceiver

# Runs a whole `agentworld send` in this process, then says which OpenTelemetry modules it loaded.
SEND_THEN_LIST = """
import json, sys
from agentworld.cli.entry import main
try:
    main(sys.argv[1:])
except SystemExit as exc:
    assert not exc.code, exc.code
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] == "opentelemetry")))
"""


@pytest.mark.parametrize(
    ("variables", "traced"),
    [
        ({}, False),
        ({"OTEL_SERVICE_NAME": "quiet", "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"}, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "{endpoint}", "OTEL_SDK_DISABLED": "true"}, False),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "{endpoint}/v1/traces"}, True),
    ],
    ids=["no-variables", "other-otel-variables", "sdk-disabled", "traces-endpoint"],
)
def test_spans_are_sent_and_opentelemetry_loaded_only_with_an_endpoint(
    cli: Any, server: OpenAIWireServer, receiver: OtlpReceiver, db_url: str, tmp_path: Path,
    variables: dict[str, str], traced: bool,
) -> None:
    cli("world", "create", "w")
    cli("agent", "create", "w", "a1", "--provider", "openai", "--model", "m", "--base-url", server.base_url)
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env |= {"HOME": str(tmp_path), "AGENTWORLD_LLM_RETRIES": "1"}
    env |= {k: v.format(endpoint=receiver.endpoint) for k, v in variables.items()}
    done = subprocess.run(
        [sys.executable, "-c", SEND_THEN_LIST, "--db", db_url, "send", "w", "@a1 hello"],
        env=env, capture_output=True, text=True, timeout=60, check=True,
    )
    loaded = json.loads(done.stdout.splitlines()[-1])
    assert "a1: " in done.stdout  # the turn was answered

    if traced:
        assert {"opentelemetry.sdk.trace", "opentelemetry.exporter.otlp.proto.http.trace_exporter"} <= set(loaded)
        names = {s.name for s in receiver.wait_for(lambda s: len(s) > 0, "spans")}
        assert {"post_message", "invoke_agent a1", "chat m"} <= names
    else:
        assert loaded == []
        assert receiver.spans == []


def test_a_command_that_runs_no_turn_does_not_load_the_sdk_even_with_an_endpoint(
    cli: Any, receiver: OtlpReceiver, db_url: str, tmp_path: Path
) -> None:
    cli("world", "create", "w")
    env = {**os.environ, "HOME": str(tmp_path), **receiver.env()}
    done = subprocess.run(
        [sys.executable, "-c", SEND_THEN_LIST, "--db", db_url, "world", "list"],
        env=env, capture_output=True, text=True, timeout=60, check=True,
    )
    assert "w" in done.stdout
    assert json.loads(done.stdout.splitlines()[-1]) == []
    assert receiver.spans == []

"""``redact_json_text``: a tool's result is redacted by its decoded strings, not its JSON text.

In the text of ``{"content": "A=1\\nDB_PASSWORD=hunter2"}`` the newline is the two characters
``\\n``, so ``DB_PASSWORD`` never starts a line there and ``redact`` of the text kept the
password in the tool log and the event log.
"""

from __future__ import annotations

import json

from agentworld.redaction import redact, redact_json_text

ENV_FILE = "OPENAI_API_KEY=abc123def456\nDB_PASSWORD=hunter2hunter2\nMY_TOKEN='quoted-value'\n"


def test_pairs_after_the_first_line_of_a_string_are_masked() -> None:
    text = json.dumps({"path": ".env", "content": ENV_FILE})
    assert "hunter2hunter2" in redact(text)  # the text-level pass this replaces
    shown = json.loads(redact_json_text(text))
    assert shown["content"] == (
        "OPENAI_API_KEY=[REDACTED:api_key]\nDB_PASSWORD=[REDACTED:password]\nMY_TOKEN='[REDACTED:token]'\n"
    )
    assert shown["path"] == ".env"


def test_a_value_with_escaped_quotes_is_read_as_it_is() -> None:
    text = json.dumps({"stdout": 'first\n{"password": "s3cr3t-value"}\n'})
    assert "s3cr3t-value" not in redact_json_text(text)


def test_json_inside_a_string_is_decoded_too() -> None:
    inner = json.dumps({"log": "ok\nDB_PASSWORD=hunter2hunter2"})
    text = json.dumps({"result": inner})
    shown = redact_json_text(text)
    assert "hunter2hunter2" not in shown
    assert json.loads(json.loads(shown)["result"])["log"] == "ok\nDB_PASSWORD=[REDACTED:password]"


def test_secret_named_keys_are_masked_whole() -> None:
    shown = json.loads(redact_json_text(json.dumps({"api_key": "x" * 12, "n": 3})))
    assert shown == {"api_key": "[REDACTED:api_key]", "n": 3}


def test_known_values_are_masked_in_decoded_strings() -> None:
    text = json.dumps({"content": 'a "quoted" line\nplain-secret-1234\n'})
    shown = redact_json_text(text, known={"MY_VALUE": "plain-secret-1234"})
    assert json.loads(shown)["content"] == 'a "quoted" line\n[REDACTED:MY_VALUE]\n'


def test_text_that_is_not_json_is_redacted_as_text() -> None:
    assert redact_json_text("hello\nDB_PASSWORD=hunter2hunter2") == "hello\nDB_PASSWORD=[REDACTED:password]"
    assert redact_json_text('{"cut": "DB_PASSWORD=hunter2hunter2') == '{"cut": "DB_PASSWORD=[REDACTED:password]'


def test_a_document_with_nothing_to_mask_comes_back_byte_for_byte() -> None:
    text = '{"b":1,  "a": ["x", "{\\"y\\":2}"]}'
    assert redact_json_text(text) == text


def test_a_document_nested_too_deep_to_walk_is_redacted_as_text() -> None:
    text = "[" * 100_000 + '"DB_PASSWORD=hunter2hunter2"' + "]" * 100_000
    assert "hunter2hunter2" not in redact_json_text(text)

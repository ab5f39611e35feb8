"""Read a non-streamed OpenAI chat completion, as JSON, into one ``LLMResponse``; no I/O.

The provider asks the SDK for the response body as it was parsed from JSON (``cast_to=object``)
instead of the SDK's typed ``ChatCompletion``: we read five fields, where building the models
walks every field of the response.

Reading the dict also means a body in the wrong shape is said in one line
(``ProviderResponseError``), where the typed models, built without validation, let it through
as attributes that are missing or of the wrong type. The rules match the streamed path
(``openai_stream``): arguments verbatim (``"{}"`` when none came), only ``function`` calls
(a call without a ``type`` is one: some compatible servers leave it out), missing usage
counts as zero.
"""

from __future__ import annotations

import json
from typing import Any

from agentworld.errors import ProviderResponseError
from agentworld.models import LLMResponse, ToolCall, Usage
from agentworld.providers.errors import masked


def completion_response(body: object, *, endpoint: str) -> LLMResponse:
    """The response ``endpoint`` answered with ``body`` (its JSON, parsed)."""

    def wrong(what: str) -> ProviderResponseError:
        return wrong_shape(endpoint, what)

    if not isinstance(body, dict):
        raise wrong("a body that is not a JSON object")
    choices = body.get("choices")
    if not choices:
        raise wrong("no choices")
    if not isinstance(choices, list) or not isinstance(choices[0], dict):
        raise wrong("choices that are not a list of objects")
    message = choices[0].get("message")
    if not isinstance(message, dict):
        raise wrong("a choice without a message object")
    content = message.get("content") or ""
    if not isinstance(content, str):
        raise wrong("a message whose content is not text")
    calls = [_tool_call(call, wrong) for call in _calls(message.get("tool_calls"), wrong)]
    model = body.get("model")
    return LLMResponse.of(
        content,
        [call for call in calls if call is not None],
        usage=usage_of(body.get("usage")),
        model=model if isinstance(model, str) else None,
    )


def _calls(value: object, wrong: Any) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise wrong("tool_calls that are not a list")
    return value


def _tool_call(call: object, wrong: Any) -> ToolCall | None:
    if not isinstance(call, dict):
        raise wrong("a tool call that is not an object")
    if call.get("type", "function") != "function":
        return None  # another kind of call (custom tools): not one we offered
    function = call.get("function")
    call_id = call.get("id")
    if not isinstance(function, dict) or not isinstance(call_id, str):
        raise wrong("a tool call without an id or a function")
    name, arguments = function.get("name"), function.get("arguments")
    if not isinstance(name, str) or not isinstance(arguments, str | None):
        raise wrong("a tool call whose name or arguments are not text")
    return ToolCall.of(call_id, name, arguments or "{}")


def wrong_shape(endpoint: str, what: str) -> ProviderResponseError:
    """A 200 whose JSON is not in the shape of a completion (or of a stream's chunk)."""
    return ProviderResponseError(f"{endpoint} returned {what}", status=200)


def usage_of(value: object) -> Usage:
    """The token counts of a ``usage`` object; what is missing or not a count is zero."""
    if not isinstance(value, dict):
        return Usage()
    counts = [value.get("prompt_tokens"), value.get("completion_tokens")]
    inputs, outputs = (c if isinstance(c, int) and not isinstance(c, bool) else 0 for c in counts)
    return Usage(input_tokens=inputs, output_tokens=outputs)


def error_text(body: object, message: str) -> str:
    """An error body's own words (``body`` as the SDK's ``APIStatusError.body`` holds it),
    else ``message``."""
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])
        return json.dumps(body)
    return message


def stream_error(error: object, *, endpoint: str) -> ProviderResponseError:
    """An error the endpoint sent inside a stream that had begun well (``{"error": ...}`` as
    an event): the answer failed on its side, so it is a server error, which is retried."""
    message = error.get("message") if isinstance(error, dict) else None
    if not isinstance(message, str) or not message:
        message = "An error occurred during streaming"
    return ProviderResponseError(
        masked(f"{endpoint} reported an error in its stream: {message}"), status=500, body=masked(message)
    )

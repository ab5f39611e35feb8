"""The secrets of this process: its secret-named variables and the variables its agents read
their API keys from.

An agent may read its key from any variable (``agent create --api-key-env LLMX``); nothing in
``LLMX`` says "secret", so the name-based nets miss it. Every place that learns such a name
(the provider registry when it reads a key, the runtime when it opens a world and when it
builds an agent's provider) calls :func:`note_key_variable`, and every mask of this process's
secrets — tool output, tool results, provider errors, failure messages — reads the names back
with :func:`key_variables`. A name is never forgotten, since a value once in use may still be
quoted in a later error or output.

This is process state (and reads ``os.environ``), so it lives beside the pure ``redaction``
package rather than in it, and loads that package only when a text is masked: every turn's
modules import this one for ``note_key_variable``, while masking happens on failures, and
building ``redaction``'s patterns and records would slow a fresh process (benchmarks/README.md).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

_key_variables: set[str] = set()


def note_key_variable(name: str | None) -> None:
    """Count ``name`` (an agent's ``api_key_env``) as secret in this process from now on."""
    if name:
        _key_variables.add(name)


def key_variables() -> frozenset[str]:
    """The names noted so far: variables that hold an API key an agent of this process uses."""
    return frozenset(_key_variables)


def process_secrets(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Name -> value of each secret-named variable of ``environ`` (default: this process's) and
    of each noted key variable, for values of at least ``KNOWN_MIN_LENGTH`` characters."""
    from agentworld.redaction import KNOWN_MIN_LENGTH, secret_env_values

    env = os.environ if environ is None else environ
    found = secret_env_values(env)
    for name in _key_variables:
        value = env.get(name, "")
        if len(value) >= KNOWN_MIN_LENGTH:
            found.setdefault(name, value)
    return found


def redact_process_text(text: str, *, environ: Mapping[str, str] | None = None) -> str:
    """``text`` (an error, a failure message, a log line) with this process's secret values
    masked as ``[REDACTED:<NAME>]`` and every known secret shape (``sk-…``, ``Bearer …``,
    ``password=…``) masked too: a provider may quote the key it was sent in its error body."""
    from agentworld.redaction import redact_text

    return redact_text(text, known=process_secrets(environ))

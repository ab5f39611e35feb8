"""The environment a tool's process sees, and the secrets kept out of what it prints.

A tool must not inherit the CLI's environment: it holds the provider API keys,
and variables such as ``BASH_ENV``, ``BASH_FUNC_*`` or ``LD_PRELOAD`` that make
a shell run code the policy never saw. So the environment is built from an
allow-list: a sanitized ``PATH``, the locale and user basics, ``SHELL`` set to
the bash that runs the line, and the names a world lists in its ``tool_env``
setting. Variables that change how a shell or the dynamic loader behave are
never passed, even when listed. Provider keys, and the variables agents read
their keys from (``withheld``, whatever their names: ``LC_MYKEY`` too), pass only
when the world's owner lists them explicitly. The locale passes as its own
categories (``LC_ALL``, ``LC_CTYPE`` ...), not as every ``LC_*`` name, which is
where a key held in some ``LC_`` variable would have come through.

Whatever a tool prints is then scrubbed of the values of secret-named
variables of this process (``*KEY*``, ``*TOKEN*``, ``*SECRET*``, ...) and of the
variables its agents read their keys from (``--api-key-env``, passed as ``names``; see
``process_secrets``), even the ones a world passed on purpose, so they reach neither the transcript nor the
model. ``shell_cmd`` masks its output as it reads it (a cap may cut a secret in
two); every tool's result, whatever the tool (a file read, an MCP server, a
client), is masked again as a JSON document (``with_json_forms``) where it is
made (``tools/executor.py``).

Everything here is a pure function over a mapping; callers pass ``os.environ``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping

from agentworld.models.settings import NEVER_PASSED as NEVER_PASSED
from agentworld.models.settings import NEVER_PASSED_PREFIXES as NEVER_PASSED_PREFIXES
from agentworld.models.settings import check_tool_env_name as check_tool_env_name
from agentworld.models.settings import validate_tool_env as validate_tool_env
from agentworld.redaction import PROVIDER_KEY_NAMES

DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
"""The ``PATH`` tools get when the process has none (or none that survives sanitizing)."""

LOCALE_CATEGORIES = frozenset(
    {
        "LC_ALL", "LC_CTYPE", "LC_NUMERIC", "LC_TIME", "LC_COLLATE", "LC_MONETARY", "LC_MESSAGES",
        "LC_PAPER", "LC_NAME", "LC_ADDRESS", "LC_TELEPHONE", "LC_MEASUREMENT", "LC_IDENTIFICATION",
    }
)
"""The locale variables the C library reads (``locale(7)``); any other ``LC_*`` name is just a
variable (ssh forwards ``LC_*`` as a way to carry anything) and is not passed by default."""

PASSED_THROUGH = frozenset(
    {"HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TERM", "TZ", "TMPDIR"} | LOCALE_CATEGORIES
)
"""Passed to every tool when set (unless withheld)."""

SECRET_NAME_PARTS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL")
SECRET_MIN_LENGTH = 6
"""Shorter values are not masked: replacing every ``1`` or ``true`` would garble output."""

def sanitize_path(value: str | None) -> str:
    """Keep only the absolute directories of a ``PATH`` (no empty, ``.`` or relative entries),
    each once; fall back to ``DEFAULT_PATH`` when nothing is left.

    An empty or relative entry makes the shell look up commands in its current
    directory, which is the agent's working directory: a file the agent wrote
    there could then stand in for ``ls``.
    """
    kept: list[str] = []
    for entry in (value or "").split(":"):
        if entry.startswith("/") and entry not in kept:
            kept.append(entry)
    return ":".join(kept) or DEFAULT_PATH


def tool_environment(
    environ: Mapping[str, str],
    *,
    shell: str,
    passed: Iterable[str] = (),
    withheld: Iterable[str] = (),
) -> dict[str, str]:
    """The environment for a tool's process, built from ``environ`` (the caller's ``os.environ``).

    ``shell`` becomes ``SHELL``; ``passed`` are the names the world lists in ``tool_env``
    (passed when set, unless in ``NEVER_PASSED``); ``withheld`` names more variables that
    must not come through the default allow-list (the agents' key variables,
    ``process_secrets.key_variables()``) unless ``passed`` lists them: the owner's explicit
    choice.
    """
    listed = set(passed)
    blocked = PROVIDER_KEY_NAMES | set(withheld)
    env: dict[str, str] = {}
    for name, value in environ.items():
        if check_tool_env_name(name) is not None:
            continue  # never passed, whatever the lists say
        if name in listed or (name in PASSED_THROUGH and name not in blocked):
            env[name] = value
    env["PATH"] = sanitize_path(environ.get("PATH"))
    env["SHELL"] = shell
    return env


def is_secret_name(name: str) -> bool:
    """Whether a variable's name says it holds a secret (``*KEY*``, ``*TOKEN*``, a provider key...)."""
    upper = name.upper()
    return upper in PROVIDER_KEY_NAMES or any(part in upper for part in SECRET_NAME_PARTS)


def secret_values(environ: Mapping[str, str], *, names: Iterable[str] = ()) -> dict[str, str]:
    """Secret value → variable name, for each secret-named variable (or one of ``names``) whose
    value is at least ``SECRET_MIN_LENGTH`` characters long."""
    extra = set(names)
    found: dict[str, str] = {}
    for name, value in sorted(environ.items()):
        if len(value) >= SECRET_MIN_LENGTH and (name in extra or is_secret_name(name)):
            found.setdefault(value, name)
    return found


def redact_secrets(text: str, secrets: Mapping[str, str], *, cut: bool = False) -> str:
    """Replace every secret value in ``text`` by ``[REDACTED:<NAME>]``.

    Longer values go first, so a secret that contains another is masked whole.
    With ``cut`` (the text was truncated), a trailing start of a secret is dropped
    too, so a cap that falls inside a secret does not show its first half.
    """
    for value in sorted(secrets, key=len, reverse=True):
        if value in text:
            text = text.replace(value, f"[REDACTED:{secrets[value]}]")
    if cut:
        for value in secrets:
            for length in range(min(len(value) - 1, len(text)), 0, -1):
                if text.endswith(value[:length]):
                    text = text[:-length]
                    break
    return text


def with_json_forms(secrets: Mapping[str, str]) -> dict[str, str]:
    """``secrets`` (value → name) plus each value as it is written inside a JSON string
    (``\\"``, ``\\\\``, ``\\uXXXX``), so a value is masked in a JSON document too."""
    forms = dict(secrets)
    for value, name in secrets.items():
        for ascii_only in (True, False):
            escaped = json.dumps(value, ensure_ascii=ascii_only)[1:-1]
            forms.setdefault(escaped, name)
    return forms

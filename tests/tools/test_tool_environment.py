"""The clean tool environment and secret masking, as pure functions over a mapping."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from agentworld.models import World
from agentworld.tools.environment import (
    DEFAULT_PATH,
    check_tool_env_name,
    is_secret_name,
    redact_secrets,
    sanitize_path,
    secret_values,
    tool_environment,
    validate_tool_env,
)
from agentworld.tools.registry import ToolContext

PROCESS_ENV = {
    "PATH": "/usr/bin:/bin",
    "HOME": "/home/u",
    "USER": "u",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "TERM": "xterm",
    "OPENAI_API_KEY": "sk-openai-123456",
    "ANTHROPIC_API_KEY": "sk-ant-123456",
    "MY_LLM_KEY": "llm-123456",
    "BASH_ENV": "/tmp/evil.sh",
    "ENV": "/tmp/evil.sh",
    "BASH_FUNC_ls%%": "() { touch P; }",
    "LD_PRELOAD": "/tmp/evil.so",
    "PS4": "$(touch P)",
    "SHELLOPTS": "xtrace",
    "MY_VAR": "mine",
    "SHELL": "/bin/zsh",
}


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/usr/bin:/bin", "/usr/bin:/bin"),
        (".:/usr/bin::bin:./x:/bin:", "/usr/bin:/bin"),
        ("/usr/bin:/usr/bin:/bin", "/usr/bin:/bin"),
        ("", DEFAULT_PATH),
        (None, DEFAULT_PATH),
        (".:relative", DEFAULT_PATH),
    ],
)
def test_path_keeps_only_absolute_directories(path: str | None, expected: str) -> None:
    assert sanitize_path(path) == expected


def test_only_the_allow_list_reaches_a_tool() -> None:
    env = tool_environment(PROCESS_ENV, shell="/bin/bash")
    assert env == {
        "PATH": "/usr/bin:/bin",
        "HOME": "/home/u",
        "USER": "u",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "TERM": "xterm",
        "SHELL": "/bin/bash",
    }


def test_a_world_can_pass_its_own_variables_and_explicitly_a_provider_key() -> None:
    env = tool_environment(PROCESS_ENV, shell="/bin/bash", passed=["MY_VAR", "OPENAI_API_KEY", "UNSET"])
    assert env["MY_VAR"] == "mine" and env["OPENAI_API_KEY"] == "sk-openai-123456"
    assert "UNSET" not in env and "ANTHROPIC_API_KEY" not in env


def test_variables_that_run_code_never_pass_even_when_listed() -> None:
    listed = ["BASH_ENV", "ENV", "BASH_FUNC_ls%%", "LD_PRELOAD", "PS4", "SHELLOPTS"]
    env = tool_environment(PROCESS_ENV, shell="/bin/bash", passed=listed)
    assert not set(listed) & set(env)


def test_a_withheld_name_does_not_come_through_the_defaults() -> None:
    """An agent's api_key_env that happens to be a default name still stays out unless listed."""
    assert "TERM" not in tool_environment(PROCESS_ENV, shell="/bin/bash", withheld=["TERM"])
    assert "TERM" in tool_environment(PROCESS_ENV, shell="/bin/bash", withheld=["TERM"], passed=["TERM"])


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("MY_VAR", None),
        ("_x1", None),
        ("OPENAI_API_KEY", None),  # allowed: the owner's explicit choice
        ("1ABC", "not a variable name"),
        ("A-B", "not a variable name"),
        ("", "not a variable name"),
        ("BASH_FUNC_ls%%", "not a variable name"),
        ("BASH_ENV", "never passed"),
        ("ENV", "never passed"),
        ("LD_PRELOAD", "never passed"),
        ("LD_LIBRARY_PATH", "never passed"),
        ("DYLD_INSERT_LIBRARIES", "never passed"),
        ("BASH_FUNC_x", "never passed"),
        ("PYTHONSTARTUP", "never passed"),
        ("PROMPT_COMMAND", "never passed"),
        ("SHELLOPTS", "never passed"),
        ("BASHOPTS", "never passed"),
        ("PS4", "never passed"),
        ("IFS", "never passed"),
        ("CDPATH", "never passed"),
        ("GLOBIGNORE", "never passed"),
    ],
)
def test_tool_env_names_are_checked(name: str, problem: str | None) -> None:
    found = check_tool_env_name(name)
    assert found is None if problem is None else (found is not None and problem in found)


def test_a_world_refuses_a_dangerous_tool_env_and_keeps_a_good_one() -> None:
    world = World.model_validate({"name": "w", "toolEnv": ["MY_VAR", "MY_VAR", "OPENAI_API_KEY"]})
    assert world.tool_env == ["MY_VAR", "OPENAI_API_KEY"]
    assert ToolContext.for_world(world, chat_id="c", agent="a").tool_env == ("MY_VAR", "OPENAI_API_KEY")
    with pytest.raises(ValidationError, match="BASH_ENV changes how the shell"):
        World(name="w", tool_env=["BASH_ENV"])
    with pytest.raises(ValueError, match="not a variable name"):
        validate_tool_env(["OK", "NOT OK"])


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("OPENAI_API_KEY", True),
        ("GEMINI_API_KEY", True),
        ("GITHUB_TOKEN", True),
        ("db_password", True),
        ("MYSQL_PASSWD", True),
        ("AWS_SECRET_ACCESS_KEY", True),
        ("GOOGLE_APPLICATION_CREDENTIALS", True),
        ("HOME", False),
        ("PATH", False),
        ("MY_VAR", False),
    ],
)
def test_secret_names(name: str, secret: bool) -> None:
    assert is_secret_name(name) is secret


def test_secret_values_skip_short_and_non_secret_values() -> None:
    found = secret_values({"A_TOKEN": "12345", "B_TOKEN": "123456", "MY_VAR": "mine-long-value", "PLAIN": "x" * 20},
                          names=["PLAIN"])
    assert found == {"123456": "B_TOKEN", "x" * 20: "PLAIN"}


def test_redaction_masks_the_longest_value_first() -> None:
    secrets = {"abcdef": "SHORT_KEY", "abcdef-ghijkl": "LONG_KEY"}
    assert redact_secrets("x abcdef-ghijkl y abcdef z", secrets) == (
        "x [REDACTED:LONG_KEY] y [REDACTED:SHORT_KEY] z"
    )


def test_a_cut_inside_a_secret_shows_none_of_it() -> None:
    secrets = {"sk-0123456789": "OPENAI_API_KEY"}
    assert redact_secrets("output ends with sk-01234", secrets, cut=True) == "output ends with "
    assert redact_secrets("output ends with sk-01234", secrets) == "output ends with sk-01234"


def test_only_the_locale_categories_pass_of_the_lc_variables() -> None:
    environ = {**PROCESS_ENV, "LC_CTYPE": "C.UTF-8", "LC_MESSAGES": "C", "LC_MYKEY": "lc-0123456789",
               "LC_TERMINAL": "iTerm2"}
    env = tool_environment(environ, shell="/bin/bash")
    assert {name for name in env if name.startswith("LC_")} == {"LC_ALL", "LC_CTYPE", "LC_MESSAGES"}
    assert tool_environment(environ, shell="/bin/bash", passed=["LC_MYKEY"])["LC_MYKEY"] == "lc-0123456789"


def test_an_agents_key_variable_is_withheld_even_under_a_locale_name() -> None:
    env = tool_environment(PROCESS_ENV, shell="/bin/bash", withheld=["LC_ALL"])
    assert "LC_ALL" not in env and env["LANG"] == "C.UTF-8"

"""Build the provider an agent's settings ask for.

SDKs are imported only when an agent of that provider is first used, so the
CLI starts fast (SPEC §6). API keys come from the environment at that moment
and are never stored.
"""

from __future__ import annotations

import functools
import os

from agentworld.errors import InvalidInputError, ProviderConfigError
from agentworld.models import Agent
from agentworld.process_secrets import note_key_variable
from agentworld.providers.base import LLMProvider
from agentworld.providers.retrying import RetryingProvider

DEFAULT_KEY_ENV: dict[str, str] = {
    "openai": "OPENAI_API_KEY",
    "openai-compatible": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "google": "GOOGLE_API_KEY",
    "azure": "AZURE_OPENAI_API_KEY",
    "xai": "XAI_API_KEY",
    "ollama": "OLLAMA_API_KEY",
}
DEFAULT_BASE_URL: dict[str, str] = {
    "ollama": "http://localhost:11434/v1",
    "xai": "https://api.x.ai/v1",
}
RETRIES_ENV = "AGENTWORLD_LLM_RETRIES"
CONNECTIONS_ENV = "AGENTWORLD_LLM_CONNECTIONS"
"""Requests an OpenAI-compatible endpoint gets at once from this process (default 64; the
rest wait in the SDK client's pool, see ``providers.openai``): raise it for a slow model
serving many chats."""
OPENAI_TIMEOUT = 120.0


def _max_connections() -> int:
    from agentworld.providers.openai import DEFAULT_MAX_CONNECTIONS

    return _whole_number(CONNECTIONS_ENV, DEFAULT_MAX_CONNECTIONS)


def _whole_number(variable: str, default: int) -> int:
    """A setting of the environment that must be a whole number of at least 1."""
    raw = os.environ.get(variable, "").strip()
    try:
        value = int(raw) if raw else default
    except ValueError:
        raise ProviderConfigError(f"${variable} must be a whole number, not {raw!r}") from None
    if value < 1:
        raise ProviderConfigError(f"${variable} must be at least 1, not {value}")
    return value


def _api_key(agent: Agent, *, required: bool) -> tuple[str, str]:
    env = agent.api_key_env or DEFAULT_KEY_ENV.get(agent.provider, "OPENAI_API_KEY")
    # Its value is a secret whatever the variable is called: masked in tool output and errors.
    note_key_variable(env)
    key = os.environ.get(env, "")
    if not key and agent.provider == "google":
        key = os.environ.get("GEMINI_API_KEY", "")
    if not key and required:
        raise ProviderConfigError(
            f"agent {agent.name!r} ({agent.provider}) needs an API key: set ${env}"
        )
    # Local OpenAI-compatible servers ignore the key, but the SDK insists on one.
    return key or "not-needed", env


def build_provider(agent: Agent) -> LLMProvider:
    """A fresh provider for the agent, wrapped in the standard retry policy."""
    provider: LLMProvider
    match agent.provider:
        case "scripted":
            from agentworld.providers.scripted import ScriptedProvider, responder_for_model

            return ScriptedProvider(responder_for_model(agent.model))
        case "openai" | "openai-compatible" | "ollama" | "xai":
            from agentworld.providers.openai import OpenAIProvider

            base_url = agent.base_url or DEFAULT_BASE_URL.get(agent.provider)
            needs_key = agent.provider in ("openai", "xai") and agent.base_url is None
            if agent.provider == "openai-compatible" and base_url is None:
                raise ProviderConfigError(
                    f"agent {agent.name!r} uses openai-compatible: set --base-url"
                )
            key, env = _api_key(agent, required=needs_key)
            provider = OpenAIProvider(
                api_key=key,
                base_url=base_url,
                api_key_env=env,
                timeout=OPENAI_TIMEOUT,
                max_connections=_max_connections(),
            )
        case "anthropic":
            from agentworld.providers.anthropic import AnthropicProvider

            key, env = _api_key(agent, required=agent.base_url is None)
            provider = AnthropicProvider(api_key=key, base_url=agent.base_url, api_key_env=env)
        case "azure":
            provider = _azure(agent)
        case "google":
            from agentworld.providers.google import GoogleProvider

            key, env = _api_key(agent, required=agent.base_url is None)
            provider = GoogleProvider(api_key=key, base_url=agent.base_url, api_key_env=env)
        case _:
            raise InvalidInputError(f"unknown provider {agent.provider!r}")
    attempts = _whole_number(RETRIES_ENV, 3)  # attempts in all: 1 means no retry
    return RetryingProvider(provider, attempts=attempts)


AZURE_ENDPOINT_ENV = "AZURE_OPENAI_ENDPOINT"
AZURE_API_VERSION_ENV = "AZURE_OPENAI_API_VERSION"
AZURE_DEFAULT_API_VERSION = "2024-10-21"


def _azure(agent: Agent) -> LLMProvider:
    """Azure OpenAI: the model is the deployment name; endpoint and API version from the env."""
    import openai

    from agentworld.providers.openai import (
        OpenAIProvider,
        http_client,
        request_timeout,
        without_platform_headers,
    )

    key, env = _api_key(agent, required=agent.base_url is None)
    version = (
        os.environ.get(AZURE_API_VERSION_ENV)
        or os.environ.get("OPENAI_API_VERSION")
        or AZURE_DEFAULT_API_VERSION
    )
    endpoint = os.environ.get(AZURE_ENDPOINT_ENV, "")
    if agent.base_url is None and not endpoint:
        raise ProviderConfigError(
            f"agent {agent.name!r} (azure) needs an endpoint: set ${AZURE_ENDPOINT_ENV} or --base-url"
        )
    connections = _max_connections()
    # The same pool, timeouts and headers as every OpenAI-compatible endpoint (providers.openai).
    timeout = request_timeout(OPENAI_TIMEOUT)
    azure_client = functools.partial(
        openai.AsyncAzureOpenAI,
        api_key=key,
        api_version=version,
        max_retries=0,
        timeout=timeout,
        http_client=http_client(connections, OPENAI_TIMEOUT),
        default_headers=without_platform_headers(),
    )
    # A base URL names the deployment itself; an endpoint takes the agent's model as one.
    if agent.base_url is not None:
        client = azure_client(base_url=agent.base_url)
    else:
        client = azure_client(azure_endpoint=endpoint, azure_deployment=agent.model)
    return OpenAIProvider(api_key=key, api_key_env=env, client=client, max_connections=connections)


def provider_cache_key(agent: Agent) -> tuple[str, str, str, str]:
    """Agents with the same endpoint and key share one client (and its connection pool)."""
    return (
        agent.provider,
        agent.base_url or "",
        agent.api_key_env or "",
        agent.model if agent.provider == "scripted" else "",
    )

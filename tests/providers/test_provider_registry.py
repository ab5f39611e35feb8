"""build_provider: agent settings to a ready provider (SPEC L1, L5, L7)."""

from __future__ import annotations

import pytest

from agentworld.errors import InvalidInputError, ProviderConfigError, ProviderResponseError
from agentworld.models import Agent, ProviderName
from agentworld.providers.base import LLMProvider, LLMRequest, PromptMessage
from agentworld.providers.openai import OpenAIProvider
from agentworld.providers.registry import RETRIES_ENV, build_provider
from agentworld.providers.retrying import RetryingProvider
from agentworld.providers.scripted import ScriptedProvider
from agentworld.testing.openai_wire import OpenAIWireServer, Reply

REQUEST = LLMRequest(model="m", messages=[PromptMessage(role="user", content="ping")])


def agent(provider: ProviderName, model: str = "gpt-test", **kw: object) -> Agent:
    return Agent(world="w", name="a", provider=provider, model=model, **kw)  # type: ignore[arg-type]


def openai_inside(provider: LLMProvider) -> OpenAIProvider:
    assert isinstance(provider, RetryingProvider)
    assert isinstance(provider.wrapped, OpenAIProvider)
    return provider.wrapped


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "XAI_API_KEY", "OLLAMA_API_KEY", "MY_KEY_VAR", RETRIES_ENV):
        monkeypatch.delenv(name, raising=False)


def test_openai_without_key_or_base_url_names_the_key_variable() -> None:
    with pytest.raises(ProviderConfigError, match=r"\$OPENAI_API_KEY") as info:
        build_provider(agent("openai"))

    assert "'a'" in str(info.value)  # names the agent too


async def test_openai_with_key_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    provider = build_provider(agent("openai"))
    try:
        inner = openai_inside(provider)
        assert inner.api_key_env == "OPENAI_API_KEY"
        assert inner.base_url.startswith("https://api.openai.com")
    finally:
        await provider.aclose()


async def test_openai_with_base_url_needs_no_key(openai_server: OpenAIWireServer) -> None:
    provider = build_provider(agent("openai", base_url=openai_server.base_url))
    try:
        response = await provider.complete(REQUEST)
    finally:
        await provider.aclose()

    assert response.content == "echo: ping"
    assert openai_inside(provider).base_url.rstrip("/") == openai_server.base_url


def test_openai_compatible_without_base_url_is_a_config_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")  # a key does not make up for the URL

    with pytest.raises(ProviderConfigError, match="base-url"):
        build_provider(agent("openai-compatible"))


async def test_openai_compatible_with_base_url_works(openai_server: OpenAIWireServer) -> None:
    provider = build_provider(agent("openai-compatible", base_url=openai_server.base_url))
    try:
        response = await provider.complete(REQUEST, stream=True)
    finally:
        await provider.aclose()

    assert response.content == "echo: ping"


async def test_ollama_defaults_to_local_endpoint_without_key() -> None:
    provider = build_provider(agent("ollama", model="llama3"))
    try:
        assert openai_inside(provider).base_url.rstrip("/") == "http://localhost:11434/v1"
    finally:
        await provider.aclose()


async def test_ollama_base_url_can_be_overridden(openai_server: OpenAIWireServer) -> None:
    provider = build_provider(agent("ollama", model="llama3", base_url=openai_server.base_url))
    try:
        assert openai_inside(provider).base_url.rstrip("/") == openai_server.base_url
    finally:
        await provider.aclose()


def test_xai_without_key_names_its_own_variable() -> None:
    with pytest.raises(ProviderConfigError, match=r"\$XAI_API_KEY"):
        build_provider(agent("xai", model="grok"))


async def test_custom_api_key_env_is_honoured(monkeypatch: pytest.MonkeyPatch) -> None:
    custom = agent("openai", api_key_env="MY_KEY_VAR")
    with pytest.raises(ProviderConfigError, match=r"\$MY_KEY_VAR"):
        build_provider(custom)

    monkeypatch.setenv("MY_KEY_VAR", "sk-custom")
    provider = build_provider(custom)
    try:
        inner = openai_inside(provider)
        assert inner.api_key_env == "MY_KEY_VAR"
        assert inner._client.api_key == "sk-custom"
    finally:
        await provider.aclose()


async def test_custom_api_key_env_is_named_in_401_errors(
    openai_server: OpenAIWireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_KEY_VAR", "sk-wrong")
    openai_server.enqueue(Reply.error(401, "bad key"))
    provider = build_provider(
        agent("openai", base_url=openai_server.base_url, api_key_env="MY_KEY_VAR")
    )
    try:
        with pytest.raises(ProviderResponseError, match="MY_KEY_VAR"):
            await provider.complete(REQUEST)
    finally:
        await provider.aclose()

    assert len(openai_server.requests) == 1  # 401 is not retried


async def test_retry_attempts_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(RETRIES_ENV, "5")
    provider = build_provider(agent("ollama"))
    try:
        assert isinstance(provider, RetryingProvider)
        assert provider.attempts == 5
    finally:
        await provider.aclose()


@pytest.mark.parametrize(("value", "said"), [("abc", "a whole number, not 'abc'"), ("0", "at least 1, not 0"), ("-5", "at least 1, not -5")])
def test_a_bad_retry_setting_is_said_in_its_own_words(
    monkeypatch: pytest.MonkeyPatch, value: str, said: str
) -> None:
    monkeypatch.setenv(RETRIES_ENV, value)
    with pytest.raises(ProviderConfigError, match=f"AGENTWORLD_LLM_RETRIES must be {said}"):
        build_provider(agent("ollama"))


async def test_scripted_provider_works_offline() -> None:
    provider = build_provider(agent("scripted", model="echo"))
    try:
        assert isinstance(provider, ScriptedProvider)
        response = await provider.complete(REQUEST)
    finally:
        await provider.aclose()

    assert response.content == "echo: ping"
    assert response.usage.input_tokens > 0


def test_scripted_provider_with_bad_model_is_invalid_input() -> None:
    with pytest.raises(InvalidInputError):
        build_provider(agent("scripted", model="nonsense"))


async def test_azure_addresses_the_deployment_with_an_api_version(
    openai_server: OpenAIWireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AZURE_OPENAI_API_VERSION", "2024-06-01")
    agent = Agent(world="w", name="a", provider="azure", model="gpt4-deployment", base_url=openai_server.base_url)
    provider = build_provider(agent)
    assert await _say_hi_once(provider, model="gpt4-deployment") == "echo: hi"
    assert openai_server.paths == ["/v1/deployments/gpt4-deployment/chat/completions?api-version=2024-06-01"]


def test_azure_without_endpoint_names_the_env_var(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AZURE_OPENAI_ENDPOINT", raising=False)
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", "k")
    with pytest.raises(ProviderConfigError, match="AZURE_OPENAI_ENDPOINT"):
        build_provider(Agent(world="w", name="a", provider="azure", model="d"))


async def test_azure_endpoint_takes_the_model_as_its_deployment(
    openai_server: OpenAIWireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", "k")
    monkeypatch.setenv("AZURE_OPENAI_API_VERSION", "2024-06-01")
    monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", openai_server.base_url.removesuffix("/v1"))
    provider = build_provider(Agent(world="w", name="a", provider="azure", model="gpt4-deployment"))
    assert await _say_hi_once(provider, model="gpt4-deployment") == "echo: hi"
    assert openai_server.paths == ["/openai/deployments/gpt4-deployment/chat/completions?api-version=2024-06-01"]


async def _say_hi_once(provider: LLMProvider, *, model: str) -> str | None:
    """One request through ``provider``, which is closed after."""
    try:
        reply = await provider.complete(LLMRequest(model=model, messages=[PromptMessage(role="user", content="hi")]))
    finally:
        await provider.aclose()
    return reply.content

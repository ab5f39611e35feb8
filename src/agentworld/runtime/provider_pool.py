"""Provider clients shared by a world's turns (one per endpoint, so connections stay warm)."""

from __future__ import annotations

from collections.abc import Callable

from agentworld.models import Agent
from agentworld.process_secrets import note_key_variable
from agentworld.providers.base import LLMProvider
from agentworld.providers.registry import build_provider, provider_cache_key

ProviderFactory = Callable[[Agent], LLMProvider]


class ProviderPool:
    """One provider client per endpoint, reused across turns so connections stay warm."""

    def __init__(self, factory: ProviderFactory = build_provider) -> None:
        self._factory = factory
        self._providers: dict[tuple[str, ...], LLMProvider] = {}

    def get(self, agent: Agent) -> LLMProvider:
        # Whatever builds the provider, the agent's key variable is a secret from now on.
        note_key_variable(agent.api_key_env)
        key = (agent.name,) if self._factory is not build_provider else provider_cache_key(agent)
        provider = self._providers.get(key)
        if provider is None:
            provider = self._providers[key] = self._factory(agent)
        return provider

    async def aclose(self) -> None:
        providers, self._providers = list(self._providers.values()), {}
        for provider in providers:
            await provider.aclose()

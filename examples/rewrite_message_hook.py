"""An on_event hook that rewrites a user's message before any agent sees it. Offline.

The hook masks an e-mail address. The contract of a rewrite: the chat's transcript keeps
what was said, the agent's memory and the model's input carry the rewrite, and the audit
log records both.

Run: python examples/rewrite_message_hook.py
"""

from __future__ import annotations

import asyncio
import re
import tempfile
from pathlib import Path

from agentworld import (
    AgentWorld,
    HookEvent,
    LLMRequest,
    LLMResponse,
    MessageEvent,
    Respond,
    ScriptedProvider,
)

EMAIL = re.compile(r"[\w.+-]+@[\w-]+\.[\w.]+")
seen_by_model: list[str] = []


def assistant(request: LLMRequest) -> LLMResponse:
    seen_by_model.append(request.messages[-1].content or "")
    return LLMResponse.text("Noted, I will get back to you.")


def mask_emails(event: HookEvent, respond: Respond) -> HookEvent | None:
    if isinstance(event, MessageEvent) and event.message.sender == "human":
        masked = EMAIL.sub("[email]", event.message.content or "")
        return event.model_copy(update={"message": event.message.model_copy(update={"content": masked})})
    return None


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        async with AgentWorld(
            f"sqlite:///{Path(tmp) / 'example.db'}",
            provider_factory=lambda agent: ScriptedProvider(assistant),
            on_event=mask_emails,
        ) as aw:
            await aw.create_world("desk")
            await aw.create_agent("desk", "helper", provider="scripted", model="echo")

            result = await aw.send("desk", "Please write to jane.doe@example.com about the invoice")

            transcript = await aw.storage.transcript("desk", result.chat_id)
            memory = await aw.storage.memory("desk", "helper", result.chat_id)
            (rewrite,) = [e for e in await aw.audit_log("desk") if e.event == "rewrite"]
            detail = rewrite.detail or {}
            print("said (transcript):", transcript[0].content)
            print("processed (memory):", memory[0].content)
            print("model saw:", seen_by_model[0])
            print("audit:", rewrite.actor, "->", detail["processed"])
            assert transcript[0].content == "Please write to jane.doe@example.com about the invoice"
            assert memory[0].content == "Please write to [email] about the invoice"
            assert seen_by_model == ["Please write to [email] about the invoice"]
            assert detail["original"] == transcript[0].content


if __name__ == "__main__":
    asyncio.run(main())

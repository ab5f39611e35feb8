"""Agent World: worlds of LLM agents that talk by @mention, use tools and ask a human first."""

from __future__ import annotations

import logging

# A library logs, the application decides where logs go (the CLI: $AGENTWORLD_LOG).
logging.getLogger("agentworld").addHandler(logging.NullHandler())

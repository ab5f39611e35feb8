"""LLM providers: pure clients behind one interface (SPEC §2.3)."""

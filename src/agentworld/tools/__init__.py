"""Tools the agents may call (SPEC §2.5)."""

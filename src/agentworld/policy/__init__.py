"""The policy engine: which tool calls are allowed, denied or need a person (SPEC §2.7)."""

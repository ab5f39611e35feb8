"""Who may run a tool call: authorization decisions and human approvals (SPEC §2.6)."""

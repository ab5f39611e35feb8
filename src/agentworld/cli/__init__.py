"""The agentworld command line."""

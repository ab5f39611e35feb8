"""``python -m agentworld`` runs the CLI."""

from agentworld.cli.entry import main

main()

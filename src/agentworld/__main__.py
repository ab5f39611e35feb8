"""``python -m agentworld`` runs the CLI."""

from agentworld.cli.app import main

main()

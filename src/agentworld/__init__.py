"""Agent World."""

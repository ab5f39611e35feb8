"""The agent runtime: queues, routing and the agent loop."""

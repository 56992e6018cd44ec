"""The agent's tools."""

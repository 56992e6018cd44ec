"""Sub-agents the agent starts: delegation, agent runs, the inbox and signals (issue 13)."""

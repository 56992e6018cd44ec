"""Sub-agents in the window: the tree's run marks, the Runs dock, the Inbox dock and
"Stop all agents" (issue 13)."""

"""Background tasks' tools: process identity, the held-back launch and reading their logs."""

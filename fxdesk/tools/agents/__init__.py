"""The agent's tools for sub-agents: delegate, emit_signal, list_runs, cancel_run (issue 13)."""

"""Background tasks: long-running commands (dev servers, watchers) started, tracked and stopped."""

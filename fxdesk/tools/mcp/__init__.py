"""MCP tool servers: connections held on a loop of their own, and their tools as agent tools."""

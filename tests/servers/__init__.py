"""Loopback servers for the System One and MCP tests (real sockets, real subprocesses)."""

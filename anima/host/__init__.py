"""The host's face: the prompt injection, the agent's tools, the MCP server."""

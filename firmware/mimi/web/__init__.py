"""The LAN web server's parts (microdot, ``firmware/lib/microdot``): ``mcp_route`` puts the
MCP endpoint on it. Importing the package does nothing."""

"""`python -m mcp_server`: the MCP server over stdio (same as `mint-migrate serve`)."""

from mcp_server.cli import main

if __name__ == "__main__":
    main(["serve"])

"""`python -m mcp_server [COMMAND ...]`: the `mint-migrate` CLI; with no command, the MCP server
over stdio (same as `mint-migrate serve`). The plugin's launcher starts the server this way."""

import sys

from mcp_server.cli import main

if __name__ == "__main__":
    main(sys.argv[1:] or ["serve"])

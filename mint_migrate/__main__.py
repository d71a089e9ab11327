"""`python -m mint_migrate [COMMAND ...]`: the `mint-migrate` CLI; with no command, the MCP server
over stdio (same as `mint-migrate serve`). The plugin's launcher starts the server this way."""

import sys

from mint_migrate.cli import main

if __name__ == "__main__":
    main(sys.argv[1:] or ["serve"])

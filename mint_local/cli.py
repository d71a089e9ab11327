"""`mint-local` command line."""

import sys


def main(argv: list[str] | None = None) -> None:
    print("mint-local: the backend lands with its own issue", file=sys.stderr)
    sys.exit(2)

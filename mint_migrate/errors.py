"""Errors the engine raises for the user to act on.

Front ends turn them into their own shapes: the CLI prints the message and exits 2, the MCP
server raises a ToolError with the same text. Every message says what to do next.
"""


class MintMigrateError(Exception):
    """Bad input or an unusable environment; str(error) tells the user what to do."""


class UnknownName(MintMigrateError):
    """A framework, concept, kind or rule name that does not exist."""


class OutsideWorkspace(MintMigrateError):
    """A path that would be written outside the workspace root the tool was started with."""


class WouldOverwrite(MintMigrateError):
    """A file exists and the caller did not ask to overwrite it."""

"""The tool registry: the one list of tools the MCP server, the CLI, the plugin manifest, SKILL.md's
tool table and the tests read. Adding a tool is a module here (request model, engine call, result,
texts) and its line below; see CONTRIBUTING.md."""

from mint_migrate.tools import lint, map_concept, migrate, parity, preflight, scaffold, smoke
from mint_migrate.tools.base import ToolSpec

TOOLS: tuple[ToolSpec, ...] = (
    map_concept.TOOL,
    migrate.TOOL,
    scaffold.TOOL,
    lint.TOOL,
    preflight.TOOL,
    smoke.TOOL,
    parity.TOOL,
)

BY_NAME = {tool.name: tool for tool in TOOLS}
BY_COMMAND = {tool.command: tool for tool in TOOLS}

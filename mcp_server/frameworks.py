"""The source frameworks mint-migrate reads: one line each, in detection order (the most specific
first: a TRL or torchforge script imports torch too, so the plain-PyTorch reader comes last).

Everything that lists frameworks is built from this table: the plan's `Framework` type, the CLI's
help and choices, the MCP tools' schemas, the framework table in SKILL.md
(scripts/gen_framework_table.py) and the tests. Adding a framework takes two files: its analyzer
module `mcp_server/analyze/<name>.py` (it defines `ANALYZER`; the interface is in
mcp_server/analyze/registry.py) and its line here. This module imports nothing, so the lowest
layers (plan.py) can read it.
"""

FRAMEWORKS: dict[str, str] = {
    "tinker": "the Tinker SDK / tinker-cookbook",
    "torchforge": "torchforge (meta-pytorch/forge)",
    "verl": "verl",
    "openrlhf": "OpenRLHF",
    "trl": "TRL (Hugging Face)",
    "pytorch": "a plain PyTorch / transformers loop",
}
FRAMEWORK_NAMES: tuple[str, ...] = tuple(FRAMEWORKS)


def framework_list(conjunction: str = "or") -> str:
    """`tinker, torchforge, ..., trl or pytorch`: for help texts."""
    names = list(FRAMEWORK_NAMES)
    return ", ".join(names[:-1]) + f" {conjunction} {names[-1]}" if len(names) > 1 else names[0]

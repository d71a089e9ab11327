"""Usage commands a script quotes about itself: the launch command in its module docstring, in a
usage string at the top level, or in the comment block at its top (`python sft.py
--learning_rate 2e-5 ...`). Their flags are read at the EXAMPLE level: below the real command line
and config files, above the script's own defaults."""

import libcst as cst

from mint_migrate.analyze.pyvalues import PySource
from mint_migrate.analyze.shell import Command, commands_in_text


def usage_commands(src: PySource) -> list[Command]:
    """Launch commands quoted in the module docstring, top-level usage strings or the top comments."""
    commands: list[Command] = []
    module = src.module
    if module.header:
        text = "\n".join(line.comment.value if line.comment else "" for line in module.header)
        commands += commands_in_text(text, src.label, 1)
    # the module docstring, and any other bare string at the top level (usage notes often follow
    # the imports)
    for statement in module.body:
        if not (isinstance(statement, cst.SimpleStatementLine) and statement.body):
            continue
        expr = statement.body[0]
        if isinstance(expr, cst.Expr) and isinstance(expr.value, cst.SimpleString):
            raw = expr.value.value
            quote = raw.lstrip("rRbBuUfF")
            q = 3 if quote[:3] in ('"""', "'" * 3) else 1
            text = quote[q:-q]
            if "r" not in raw[: len(raw) - len(quote)].lower():
                # a plain string's `\\` is one backslash: `python train.py \\` continues on the next line
                text = text.replace("\\\\", "\\")
            commands += commands_in_text(text, src.label, src.line(expr.value))
    return commands

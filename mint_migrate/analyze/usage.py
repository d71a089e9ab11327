"""Usage commands a script quotes about itself: the launch command in its module docstring, in a
usage string at the top level, in the comment block at its top (`python sft.py
--learning_rate 2e-5 ...`), or in a comment before a top-level statement that runs this very file
(`# python recipes/sl_loop.py model_name=Qwen/Qwen3-32B` above `def main`). Their flags are read at
the EXAMPLE level: below the real command line and config files, above the script's own defaults."""

from pathlib import PurePosixPath

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
    # comments further down name many commands (a helper's, an evaluation's): only those that run this file
    for statement in module.body:
        comments = [(k, line.comment.value) for k, line in enumerate(statement.leading_lines) if line.comment]
        if not comments or statement is module.body[0]:
            continue
        first = src.line(statement) - len(statement.leading_lines)
        for k, comment in comments:
            commands += [c for c in commands_in_text(comment, src.label, first + k) if _runs_this_file(c, src.label)]
    return commands


def _runs_this_file(command: Command, label: str) -> bool:
    me = PurePosixPath(label)
    target = command.target_parts
    return target[-1] == me.stem and (bool(command.module) or PurePosixPath(command.target).name == me.name)

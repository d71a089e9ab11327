"""Apply the safe fixes the rule visitors attached to their findings, as one libcst codemod.

Each edit is bound to the node it rewrites (by identity, in the same tree the visitors read), so
edits compose: an edit on an inner node has already run when its parent's edit sees the updated
node.
"""

import libcst as cst

from mint_migrate.lint.context import LintContext


class _ApplyEdits(cst.CSTTransformer):
    def __init__(self, ctx: LintContext) -> None:
        super().__init__()
        self.ctx = ctx
        self.applied: list[str] = []

    def on_leave(self, original_node, updated_node):
        pending = self.ctx.edits.get(id(original_node))
        if not pending:
            return updated_node
        result = updated_node
        for item in pending:
            if not isinstance(result, cst.CSTNode):
                break  # a statement already expanded into several: later edits would be lost
            result = item.edit(result)
            self.applied.append(item.rule_id)
        return result


def apply_fixes(ctx: LintContext) -> tuple[str, list[str]]:
    """(fixed source, sorted ids of the rules whose fixes were applied)."""
    if not ctx.edits:
        return ctx.module.code, []
    transformer = _ApplyEdits(ctx)
    fixed = ctx.module.visit(transformer)
    return fixed.code, sorted(set(transformer.applied))

"""What every rule visitor shares: the parsed module, positions, an index of the file (imports,
argparse defaults, class field defaults, functions), small node helpers, and the findings and
fix edits collected so far.
"""

import ast
import re
from collections.abc import Callable
from dataclasses import dataclass, field

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider

from mint_migrate import arithmetic
from mint_migrate.lint.registry import get_rule
from mint_migrate.plan import Finding
from mint_migrate.pyindex import PyIndex, string_value
from mint_migrate.pyindex import dotted_name as dotted
from mint_migrate.pyparse import PythonSyntaxError, parse_ast

Edit = Callable[[cst.CSTNode], cst.CSTNode | cst.FlattenSentinel | cst.RemovalSentinel]

SDK_MODULES = ("mint", "tinker")


@dataclass
class PendingEdit:
    rule_id: str
    edit: Edit


@dataclass
class LintContext:
    path: str
    wrapper: MetadataWrapper
    positions: dict = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    edits: dict[int, list[PendingEdit]] = field(default_factory=dict)
    # filled from the shared index (mint_migrate/pyindex.py)
    imports: dict[str, str] = field(default_factory=dict)  # local name -> qualified name
    uses_sdk: bool = False
    argparse_defaults: dict[str, cst.BaseExpression] = field(default_factory=dict)
    field_defaults: dict[str, cst.BaseExpression] = field(default_factory=dict)
    functions: dict[str, cst.FunctionDef] = field(default_factory=dict)
    hub_offline: bool = False
    collected: list = field(default_factory=list)  # the pre-pass collectors, for the rules that need them

    @property
    def module(self) -> cst.Module:
        return self.wrapper.module

    def code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)

    def position(self, node: cst.CSTNode) -> tuple[int, int]:
        if not self.positions:  # resolved on first use: most files have no findings at all
            self.positions = dict(self.wrapper.resolve(PositionProvider))
        where: CodeRange | None = self.positions.get(node)
        if where is None:
            return 1, 1
        return where.start.line, where.start.column + 1

    def report(
        self,
        rule_id: str,
        node: cst.CSTNode,
        message: str,
        fix: str | None = None,
        edit: Edit | None = None,
        edit_node: cst.CSTNode | None = None,
    ) -> None:
        """Record a finding at `node`; with `edit`, also a safe codemod on `edit_node` (default `node`)."""
        rule = get_rule(rule_id)
        line, col = self.position(node)
        for f in self.findings:  # one finding per rule and place, even when two checks see it
            if (f.id, f.line, f.col) == (rule_id, line, col):
                return
        self.findings.append(
            Finding(
                id=rule.id,
                name=rule.name,
                severity=rule.severity,
                path=self.path,
                line=line,
                col=col,
                message=message,
                fix=fix or rule.fix.split("\n\n")[0],
                fixable=edit is not None,
            )
        )
        if edit is not None:
            target = edit_node if edit_node is not None else node
            self.edits.setdefault(id(target), []).append(PendingEdit(rule_id, edit))

    # --- names ---------------------------------------------------------------------------

    def qualname(self, expr: cst.BaseExpression | None) -> str | None:
        """`types.Datum` -> "mint.types.Datum" when `types` was imported from mint; None if unknown."""
        if isinstance(expr, cst.Name):
            return self.imports.get(expr.value)
        if isinstance(expr, cst.Attribute):
            base = self.qualname(expr.value)
            return f"{base}.{expr.attr.value}" if base else None
        return None

    def sdk_symbol(self, expr: cst.BaseExpression, names: set[str] | str) -> str | None:
        """The SDK name `expr` refers to, if it is one of `names` exported by mint/tinker (or
        their `types` module); also an unresolved bare or dotted name ending in one of `names`
        in a file that imports the SDK. None for another library's symbol of the same name."""
        wanted = {names} if isinstance(names, str) else names
        last = last_name(expr)
        if last not in wanted:
            return None
        qual = self.qualname(expr)
        if qual is None:
            return last if self.uses_sdk else None
        return last if normalize_sdk(qual) == f"tinker.{last}" else None


def normalize_sdk(qual: str) -> str:
    """mint.X, mint.tinker.X, mint.types.X, tinker.types.X -> tinker.X (one SDK surface)."""
    for prefix in ("mint.tinker.", "mint."):
        if qual.startswith(prefix):
            qual = "tinker." + qual[len(prefix) :]
            break
    if qual.startswith("tinker.types."):
        qual = "tinker." + qual[len("tinker.types.") :]
    return qual


# --- node helpers -------------------------------------------------------------------------


def last_name(expr: cst.BaseExpression | None) -> str | None:
    if isinstance(expr, cst.Name):
        return expr.value
    if isinstance(expr, cst.Attribute):
        return expr.attr.value
    return None


def call_method(call: cst.Call) -> str | None:
    """The attribute name of `x.method(...)`, else None."""
    return call.func.attr.value if isinstance(call.func, cst.Attribute) else None


def keyword(call: cst.Call, name: str) -> cst.Arg | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg
    return None


def positional(call: cst.Call) -> list[cst.Arg]:
    return [a for a in call.args if a.keyword is None and not a.star]


def argument(call: cst.Call, index: int, name: str) -> cst.BaseExpression | None:
    """The value passed for a parameter given positionally at `index` or by keyword `name`."""
    kw = keyword(call, name)
    if kw is not None:
        return kw.value
    args = positional(call)
    return args[index].value if index < len(args) else None


def has_star_kwargs(call: cst.Call) -> bool:
    return any(a.star == "**" for a in call.args)


def number_value(expr: cst.BaseExpression | None, module: cst.Module) -> float | None:
    if not isinstance(expr, (cst.Integer, cst.Float, cst.UnaryOperation, cst.BinaryOperation)):
        return None
    text = module.code_for_node(expr)
    try:
        value = _eval_number(parse_ast(text.strip(), mode="eval").body)
    except (PythonSyntaxError, ValueError, ZeroDivisionError, OverflowError, TypeError, RecursionError):
        return None
    return value


_OPERATORS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "**"}


def _eval_number(node: ast.AST) -> float:
    """Numbers and + - * / ** on numbers (so `5 * 1e-6` and `2e-5 / 4` are read); nothing else."""
    return float(_exact_number(node))


def _exact_number(node: ast.AST) -> int | float:
    """The value, computed by the analyzer's own bounded evaluator (`10 ** 10 ** 10` is refused)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        return arithmetic.unary("-" if isinstance(node.op, ast.USub) else "+", _exact_number(node.operand))
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        return arithmetic.binary(_OPERATORS[type(node.op)], _exact_number(node.left), _exact_number(node.right))
    raise ValueError("not a number")


def normalized_code(module: cst.Module, node: cst.CSTNode) -> str:
    return re.sub(r"\s+", "", module.code_for_node(node))


def mask_secret(secret: str) -> str:
    """`sk-...abcd`: never more of a key than its well-known prefix and last four characters."""
    prefix = next((p for p in ("sk-", "tml-") if secret.startswith(p)), "")
    if len(secret) < 12:
        return f"{prefix}..."
    return f"{prefix}...{secret[-4:]}"


# --- the file index -----------------------------------------------------------------------
# Imports, argparse defaults, config-class field defaults and functions come from the shared
# index (mint_migrate/pyindex.py), the same one analyze and preflight read. Lint adds one thing of
# its own: whether the script switches the Hugging Face hub offline.


class _HubOffline(cst.BatchableCSTVisitor):
    """`os.environ["HF_HUB_OFFLINE"] = "1"` / `os.environ.setdefault("HF_HUB_OFFLINE", "1")`."""

    def __init__(self, ctx: "LintContext") -> None:
        super().__init__()
        self.ctx = ctx

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            if env_name_of_subscript(target.target) in HF_OFFLINE_VARS and string_value(node.value) == "1":
                self.ctx.hub_offline = True

    def visit_Call(self, node: cst.Call) -> None:
        if call_method(node) == "setdefault" and dotted(node.func) in ("os.environ.setdefault", "environ.setdefault"):
            if string_value(argument(node, 0, "key")) in HF_OFFLINE_VARS and string_value(
                argument(node, 1, "default")
            ) == "1":
                self.ctx.hub_offline = True


HF_OFFLINE_VARS = {"HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"}


def env_name_of_subscript(expr: cst.BaseExpression) -> str | None:
    """"X" for `os.environ["X"]`."""
    if isinstance(expr, cst.Subscript) and dotted(expr.value) in ("os.environ", "environ"):
        if len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Index):
            return string_value(expr.slice[0].slice.value)
    return None


ENV_READERS = {"os.environ.get", "environ.get", "os.getenv", "getenv", "os.environ.setdefault", "environ.setdefault"}


def env_name_of_call(call: cst.Call) -> str | None:
    """"X" for `os.environ.get("X")`, `os.getenv("X")`, `os.environ.setdefault("X", ...)`."""
    if dotted(call.func) in ENV_READERS:
        return string_value(argument(call, 0, "key"))
    return None


def build_context(path: str, module: cst.Module, collectors=()) -> LintContext:
    """The context for `module`, indexed; `collectors` are more pre-pass visitors (built from
    the context) that run in the same traversal."""
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    ctx = LintContext(path=path, wrapper=wrapper)
    index = PyIndex.build(module, path)
    ctx.imports = dict(index.imports)
    ctx.uses_sdk = any(name.split(".")[0] in SDK_MODULES for name, _ in index.imported)
    # `parser.set_defaults(learning_rate=...)` wins over add_argument's default, as in argparse (a
    # mint-migrate train.py sets its defaults that way: the flags are added in mint_run.py).
    ctx.argparse_defaults = {**index.argparse_defaults(), **{k: v for k, (v, _) in index.set_defaults.items()}}
    ctx.field_defaults = index.field_defaults()
    ctx.functions = index.top_functions()
    ctx.collected = [make(ctx) for make in collectors]
    cst.visit_batched(ctx.module, [_HubOffline(ctx), *ctx.collected])
    return ctx

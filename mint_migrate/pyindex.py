"""One libcst index of a Python file, shared by analyze, lint and preflight.

User Python is parsed only through the guarded door, `mint_migrate.pyparse.parse_module` (bounded,
serialised, a syntax error becomes a `PythonSyntaxError` with the line and column; nothing here
calls libcst's or CPython's parser itself). `PyIndex` then walks the tree once and keeps what
every reader asks for: imports and the qualified names they give, module and function
assignments (constants), classes and their fields (dataclasses, chz, pydantic), functions and
their parameters, argparse options and `set_defaults`, and every call with its qualified name.
Values are not evaluated here: that is the analyzer's job (analyze/pyvalues.py); lint and
preflight read the nodes directly.
"""

import dataclasses
from dataclasses import dataclass, field

import libcst as cst

from mint_migrate.pylines import node_lines
from mint_migrate.pyparse import evaluated_value, parse_module

Scope = cst.FunctionDef | None

DATACLASS_DECORATORS = {"dataclass", "dataclasses.dataclass", "chz.chz", "chz", "define", "attrs.define",
                        "attr.s", "attr.dataclass", "pydantic.dataclasses.dataclass"}


# --- node helpers ---------------------------------------------------------------------------------


def dotted_name(node: cst.CSTNode | None) -> str | None:
    """`a.b.c` for a chain of names, else None."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = dotted_name(node.value)
        return None if base is None else f"{base}.{node.attr.value}"
    return None


def literal_value(node: cst.BaseExpression):
    """A literal node's Python value, or None. Through the parse door: libcst's `evaluated_value`
    runs ast.literal_eval, which must hold the AST lock and may raise on a NUL byte."""
    return evaluated_value(node)


def string_value(node: cst.CSTNode | None) -> str | None:
    if isinstance(node, cst.SimpleString | cst.ConcatenatedString):
        value = literal_value(node)
        return value if isinstance(value, str) else None
    return None


def field_default(node: cst.BaseExpression | None) -> cst.BaseExpression | None:
    """`field(default=1e-6)` / `chz.field(default=...)` / `Field(default=...)` -> the default node;
    any other value is its own default."""
    if isinstance(node, cst.Call) and (dotted_name(node.func) or "").rsplit(".", 1)[-1] in {"field", "Field"}:
        for arg in node.args:
            if arg.keyword is not None and arg.keyword.value == "default":
                return arg.value
            # `field(default_factory=lambda: env("LR", 2e-5, float))`: what the factory returns
            if arg.keyword is not None and arg.keyword.value == "default_factory" and isinstance(arg.value, cst.Lambda):
                return arg.value.body
    return node


# Fields that only hold whitespace, punctuation or comments: never worth walking into.
_SKIP_FIELDS = {"lpar", "rpar", "comma", "semicolon", "leading_lines", "lines_after_decorators", "header", "footer",
                "trailing_whitespace", "equal", "colon", "dot", "star", "lbracket", "rbracket", "lbrace", "rbrace",
                "asynchronous", "first_line", "empty_lines", "newline", "whitespace", "operator"}
_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}


def child_fields(node_type: type) -> tuple[str, ...]:
    names = _CHILD_FIELDS.get(node_type)
    if names is None:
        names = tuple(f.name for f in dataclasses.fields(node_type)
                      if f.name not in _SKIP_FIELDS and not f.name.startswith("whitespace"))
        _CHILD_FIELDS[node_type] = names
    return names


def iter_nodes(node: cst.CSTNode, *, into_functions: bool = True):
    """Every node under `node` (itself included), depth first, without libcst's rebuilding visitor."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        if not into_functions and isinstance(current, cst.FunctionDef) and current is not node:
            continue
        children = []
        for name in child_fields(type(current)):
            value = getattr(current, name)
            if isinstance(value, cst.CSTNode):
                children.append(value)
            elif isinstance(value, tuple | list):
                children.extend(item for item in value if isinstance(item, cst.CSTNode))
        stack.extend(reversed(children))


# --- what the index holds -------------------------------------------------------------------------


@dataclass
class FieldDef:
    name: str
    default: cst.BaseExpression | None  # as written: `field(default=...)` is unwrapped by the reader
    line: int
    annotation: str | None


@dataclass
class ClassInfo:
    name: str
    line: int
    bases: list[str]
    decorators: list[str]
    fields: dict[str, FieldDef]
    node: cst.ClassDef

    @property
    def is_config(self) -> bool:
        """A dataclass, a derived config class, or a plain holder of settings named for it (`class Config:`
        with class attributes, `class TrainArgs:`)."""
        return bool(self.fields) and (any(d in DATACLASS_DECORATORS for d in self.decorators) or bool(self.bases)
                                      or self.name.endswith(("Config", "Args", "Arguments", "Hparams", "Settings")))


@dataclass
class ParamDef:
    name: str
    annotation: str | None
    default: cst.BaseExpression | None
    line: int


@dataclass
class FunctionInfo:
    name: str
    line: int
    params: dict[str, ParamDef]
    node: cst.FunctionDef
    decorators: list[str]


@dataclass
class ArgDef:
    """One `parser.add_argument(...)`: its dest, option names (normalised), default, type, action."""

    dest: str
    options: list[str]
    default: cst.BaseExpression | None
    type_name: str | None
    action: str | None
    line: int


@dataclass
class Assignment:
    scope: Scope
    targets: tuple[str, ...]  # one name, or the names of a tuple unpacking
    value: cst.BaseExpression
    line: int
    guards: tuple[tuple[cst.BaseExpression, bool], ...] = ()  # as Call.guards


@dataclass
class Call:
    node: cst.Call
    qualname: str
    name: str
    scope: Scope
    line: int
    awaited: bool = False
    assigned_to: str | None = None
    # the `if` tests around the call, with True where it runs when the test holds (`else`: False)
    guards: tuple[tuple[cst.BaseExpression, bool], ...] = ()

    def kwarg_node(self, name: str) -> cst.BaseExpression | None:
        for arg in self.node.args:
            if arg.keyword is not None and arg.keyword.value == name:
                return arg.value
        return None

    def keywords(self) -> list[str]:
        return [a.keyword.value for a in self.node.args if a.keyword is not None]

    def arg_node(self, index: int) -> cst.BaseExpression | None:
        positional = [a.value for a in self.node.args if a.keyword is None and not a.star]
        return positional[index] if index < len(positional) else None


@dataclass
class PyIndex:
    """A parsed file and the one-pass index of it."""

    module: cst.Module
    label: str
    imports: dict[str, str] = field(default_factory=dict)  # local name -> qualified name (absolute imports)
    imported: list[tuple[str, int]] = field(default_factory=list)  # every module imported, with its line
    assigns: dict[str, list[Assignment]] = field(default_factory=dict)
    classes: dict[str, ClassInfo] = field(default_factory=dict)
    functions: dict[str, FunctionInfo] = field(default_factory=dict)  # top level by name; nested as name@line
    calls: list[Call] = field(default_factory=list)
    attributes: list[tuple[str, int, cst.Attribute]] = field(default_factory=list)
    loops: list[tuple[str, cst.BaseExpression, Scope, int]] = field(default_factory=list)
    outer_loops: dict[int, tuple[str, ...]] = field(default_factory=dict)  # a loop's line -> the loops around it
    divisions: list[tuple[cst.BaseExpression, cst.BaseExpression, Scope, int]] = field(default_factory=list)
    argparse: dict[str, ArgDef] = field(default_factory=dict)
    set_defaults: dict[str, tuple[cst.BaseExpression, int]] = field(default_factory=dict)
    # `if args.lora_alpha is None: args.lora_alpha = args.lora_r * 4`: a default filled in after parsing
    filled_defaults: dict[str, Assignment] = field(default_factory=dict)
    # `args.lr = 1e-5` after `args = GRPOConfig(...)`: the object's name -> one Assignment per attribute set
    attribute_assigns: dict[str, list[Assignment]] = field(default_factory=dict)
    lines: dict[cst.CSTNode, int] = field(default_factory=dict)
    enclosing: dict[int, cst.FunctionDef] = field(default_factory=dict)  # id(nested def) -> the def around it

    @classmethod
    def of(cls, text: str, label: str) -> "PyIndex":
        return cls.build(parse_module(text, label), label)

    @classmethod
    def build(cls, module: cst.Module, label: str) -> "PyIndex":
        index = cls(module=module, label=label, lines=node_lines(module))
        collector = _Collector(index)
        collector.walk(module)
        for call in index.calls:
            call.awaited = id(call.node) in collector.awaited
            call.assigned_to = collector.assigned_calls.get(id(call.node))
            if call.name == "add_argument":
                index._argparse_def(call)
            elif call.name == "set_defaults":
                for arg in call.node.args:
                    if arg.keyword is not None:
                        index.set_defaults[arg.keyword.value] = (arg.value, index.line(arg.value))
        return index

    def line(self, node: cst.CSTNode) -> int:
        return self.lines.get(node, 1)

    def qualify(self, dotted: str) -> str:
        head, _, rest = dotted.partition(".")
        full = self.imports.get(head)
        if full is None:
            return dotted
        return f"{full}.{rest}" if rest else full

    def import_line(self, *prefixes: str) -> int | None:
        """The line where the file imports a module starting with one of `prefixes`, if it does."""
        for module, line in self.imported:
            for prefix in prefixes:
                if module == prefix or module.startswith(prefix + "."):
                    return line
        return None

    def import_component_line(self, *names: str) -> int | None:
        """The line of an import of a package that wraps one of `names` under its own namespace
        (`optimum.habana.trl`, `easyr1.verl`), if any."""
        for module, line in self.imported:
            parts = module.split(".")[1:]
            if any(name in parts for name in names):
                return line
        return None

    def top_functions(self) -> dict[str, cst.FunctionDef]:
        return {name: info.node for name, info in self.functions.items() if "@" not in name}

    def argparse_defaults(self) -> dict[str, cst.BaseExpression]:
        return {dest: arg.default for dest, arg in self.argparse.items() if arg.default is not None}

    def field_defaults(self) -> dict[str, cst.BaseExpression]:
        """Every config-class field's default by name (the first class that declares it wins)."""
        out: dict[str, cst.BaseExpression] = {}
        for info in self.classes.values():
            for name, fdef in info.fields.items():
                default = field_default(fdef.default)
                if default is not None:
                    out.setdefault(name, default)
        return out

    def module_constants(self, *names: str) -> list[Assignment]:
        """Module-level single-name assignments to any of `names`, in file order."""
        out = [a for n in names for a in self.assigns.get(n, []) if a.scope is None and len(a.targets) == 1]
        return sorted(out, key=lambda a: a.line)

    def _argparse_def(self, call: Call) -> None:
        options = [s for s in (string_value(a.value) for a in call.node.args if a.keyword is None) if s]
        if not options:
            return
        longs = [o for o in options if o.startswith("--")]
        dest_node = call.kwarg_node("dest")
        dest = string_value(dest_node) if dest_node is not None else None
        if dest is None:
            first = longs[0] if longs else options[0]
            dest = first.lstrip("-").replace("-", "_")
        type_node = call.kwarg_node("type")
        action = call.kwarg_node("action")
        self.argparse[dest] = (ArgDef(
            dest=dest,
            options=[o.lstrip("-").replace("-", "_") for o in options],
            default=call.kwarg_node("default"),
            type_name=dotted_name(type_node) if type_node is not None else None,
            action=string_value(action) if action is not None else None,
            line=self.line(call.node),
        ))


# --- the collecting walk --------------------------------------------------------------------------


class _Collector:
    """One pass over the tree collecting what the readers ask for.

    It walks the nodes' dataclass fields directly: libcst's visitor machinery rebuilds every node
    it passes through (it is shared with transformers), which costs several times the parse itself."""

    def __init__(self, index: PyIndex):
        self.index = index
        self.functions: list[cst.FunctionDef] = []
        self.class_depth: list[ClassInfo | None] = []
        self.awaited: set[int] = set()
        self.assigned_calls: dict[int, str] = {}
        self.guards: list[tuple[cst.BaseExpression, bool]] = []
        self.loop_targets: list[str] = []

    @property
    def scope(self) -> Scope:
        return self.functions[-1] if self.functions else None

    def walk(self, node: cst.CSTNode) -> None:
        if isinstance(node, cst.If):
            self._walk_if(node)
            return
        enter = _ENTER.get(type(node))
        if enter is not None:
            enter(self, node)
        for name in child_fields(type(node)):
            value = getattr(node, name)
            if isinstance(value, cst.CSTNode):
                self.walk(value)
            elif isinstance(value, tuple | list):
                for item in value:
                    if isinstance(item, cst.CSTNode):
                        self.walk(item)
        leave = _LEAVE.get(type(node))
        if leave is not None:
            leave(self, node)

    def _walk_if(self, node: cst.If) -> None:
        self.walk(node.test)
        for branch, holds in ((node.body, True), (node.orelse, False)):
            if branch is not None:
                self.guards.append((node.test, holds))
                self.walk(branch)
                self.guards.pop()

    def _in_class_body(self) -> bool:
        return bool(self.class_depth) and self.class_depth[-1] is not None

    # imports

    def visit_Import(self, node: cst.Import) -> None:
        line = self.index.line(node)
        for alias in node.names:
            name = dotted_name(alias.name) or ""
            self.index.imported.append((name, line))
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                self.index.imports[alias.asname.name.value] = name
            else:
                head = name.split(".")[0]
                self.index.imports.setdefault(head, head)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        line = self.index.line(node)
        module = dotted_name(node.module) if node.module is not None else ""
        module = "." * len(node.relative) + (module or "")
        self.index.imported.append((module, line))
        if isinstance(node.names, cst.ImportStar):
            return
        for alias in node.names:
            name = dotted_name(alias.name) or ""
            local = alias.asname.name.value if alias.asname is not None and isinstance(alias.asname.name, cst.Name) \
                else name
            self.index.imported.append((f"{module}.{name}", line))
            if not node.relative:  # a relative import names no package we could recognise
                self.index.imports[local] = f"{module}.{name}" if module else name

    # scopes

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        params = {}
        for param in [*node.params.params, *node.params.kwonly_params, *node.params.posonly_params]:
            annotation_node = param.annotation.annotation if param.annotation else None
            annotation = dotted_name(annotation_node) if annotation_node is not None else None
            if isinstance(annotation_node, cst.SimpleString):
                annotation = literal_value(annotation_node)
            params[param.name.value] = ParamDef(param.name.value, annotation, param.default, self.index.line(param))
        line = self.index.line(node)
        if not self.functions and not self._in_class_body():
            decorators = [dotted_name(d.decorator) or dotted_name(getattr(d.decorator, "func", None)) or ""
                          for d in node.decorators]
            self.index.functions[node.name.value] = FunctionInfo(node.name.value, line, params, node, decorators)
        else:
            self.index.functions.setdefault(f"{node.name.value}@{line}",
                                            FunctionInfo(node.name.value, line, params, node, []))
        if self.functions:
            self.index.enclosing[id(node)] = self.functions[-1]
        self.functions.append(node)
        self.class_depth.append(None)

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.functions.pop()
        self.class_depth.pop()

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        decorators = []
        for d in node.decorators:
            target = d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator
            decorators.append(self.index.qualify(dotted_name(target) or ""))
            decorators.append(dotted_name(target) or "")
        info = ClassInfo(name=node.name.value, line=self.index.line(node),
                         bases=[dotted_name(b.value) or "" for b in node.bases], decorators=decorators, fields={},
                         node=node)
        self.index.classes[node.name.value] = info
        self.class_depth.append(info)

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        self.class_depth.pop()

    # assignments

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if not isinstance(node.target, cst.Name):
            return
        if self._in_class_body():
            annotation = dotted_name(node.annotation.annotation)
            self.class_depth[-1].fields[node.target.value] = FieldDef(
                node.target.value, node.value, self.index.line(node), annotation)
            return
        if node.value is not None:
            self._assign((node.target.value,), node.value, node)

    def visit_Assign(self, node: cst.Assign) -> None:
        if self._in_class_body():
            for target in node.targets:
                if isinstance(target.target, cst.Name):
                    self.class_depth[-1].fields.setdefault(
                        target.target.value, FieldDef(target.target.value, node.value, self.index.line(node), None))
            return
        for target in node.targets:
            t = target.target
            if isinstance(t, cst.Name):
                self._assign((t.value,), node.value, node)
                value = node.value
                # `x = Model.from_pretrained(...).eval().to(dev)`: every call in the chain produced x
                while isinstance(value, cst.Call):
                    self.assigned_calls.setdefault(id(value), t.value)
                    value = value.func.value if isinstance(value.func, cst.Attribute) else None
            elif isinstance(t, cst.Tuple | cst.List):
                names = tuple(e.value.value if isinstance(e.value, cst.Name) else "_" for e in t.elements)
                self._assign(names, node.value, node)
            elif isinstance(t, cst.Attribute) and isinstance(t.value, cst.Name):
                assignment = Assignment(self.scope, (t.attr.value,), node.value, self.index.line(node),
                                        tuple(self.guards))
                self.index.attribute_assigns.setdefault(t.value.value, []).append(assignment)
                if self._fills_none(t):
                    self.index.filled_defaults.setdefault(t.attr.value, assignment)

    def _fills_none(self, target: cst.Attribute) -> bool:
        """Whether the innermost `if` around this assignment is `if <target> is None:`."""
        if not self.guards or not self.guards[-1][1]:
            return False
        test = self.guards[-1][0]
        return (isinstance(test, cst.Comparison) and len(test.comparisons) == 1
                and isinstance(test.comparisons[0].operator, cst.Is)
                and isinstance(test.comparisons[0].comparator, cst.Name) and test.comparisons[0].comparator.value == "None"
                and isinstance(test.left, cst.Attribute) and test.left.deep_equals(target))

    def _assign(self, names: tuple[str, ...], value: cst.BaseExpression, node: cst.CSTNode) -> None:
        assignment = Assignment(self.scope, names, value, self.index.line(node), tuple(self.guards))
        for name in names:
            if name != "_":
                self.index.assigns.setdefault(name, []).append(assignment)

    # calls and expressions

    def visit_Await(self, node: cst.Await) -> None:
        if isinstance(node.expression, cst.Call):
            self.awaited.add(id(node.expression))

    def visit_Call(self, node: cst.Call) -> None:
        name = dotted_name(node.func)
        if name is None:
            if not isinstance(node.func, cst.Attribute):
                return
            qual = name = f"?.{node.func.attr.value}"
        else:
            qual = self.index.qualify(name)
        self.index.calls.append(Call(node, qual, qual.rsplit(".", 1)[-1], self.scope, self.index.line(node),
                                     guards=tuple(self.guards)))

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self.index.attributes.append((node.attr.value, self.index.line(node.attr), node))

    def visit_For(self, node: cst.For) -> None:
        if isinstance(node.target, cst.Name):
            self.index.loops.append((node.target.value, node.iter, self.scope, self.index.line(node)))
            self.index.outer_loops[self.index.line(node)] = tuple(self.loop_targets)
        self.loop_targets.append(node.target.value if isinstance(node.target, cst.Name) else "")

    def leave_For(self, node: cst.For) -> None:
        self.loop_targets.pop()

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if isinstance(node.operator, cst.Divide):
            self.index.divisions.append((node.left, node.right, self.scope, self.index.line(node)))


_ENTER = {
    cst.Import: _Collector.visit_Import, cst.ImportFrom: _Collector.visit_ImportFrom,
    cst.FunctionDef: _Collector.visit_FunctionDef, cst.ClassDef: _Collector.visit_ClassDef,
    cst.AnnAssign: _Collector.visit_AnnAssign, cst.Assign: _Collector.visit_Assign, cst.Await: _Collector.visit_Await,
    cst.Call: _Collector.visit_Call, cst.Attribute: _Collector.visit_Attribute, cst.For: _Collector.visit_For,
    cst.BinaryOperation: _Collector.visit_BinaryOperation,
}
_LEAVE = {cst.FunctionDef: _Collector.leave_FunctionDef, cst.ClassDef: _Collector.leave_ClassDef,
          cst.For: _Collector.leave_For}

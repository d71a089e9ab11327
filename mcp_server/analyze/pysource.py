"""Python sources read with libcst: imports, calls, constants, argparse, dataclasses, docstring commands.

One visitor pass collects what every framework analyzer needs; values are then resolved on demand:
literals, module-level and function-local constants, arithmetic on them, `args.x` from argparse
(the launch command's flag when it sets one, else the argparse default), `cfg.x` from dataclasses
(HfArgumentParser / TrlParser / chz / a plain `Config(...)` instance), `os.environ.get(K, default)`
and `cfg["a"]["b"]` / `cfg.a.b` from a YAML file the script loads. Each resolved value keeps the
line it came from, and a level saying how binding it is (see evidence.Level).
"""

import dataclasses
from dataclasses import dataclass
from typing import Any

import libcst as cst

from mcp_server.analyze.evidence import Level, Loc, Value
from mcp_server.analyze.lines import node_lines
from mcp_server.analyze.shell import Command, commands_in_text
from mcp_server.analyze.yamlconf import YamlConfig
from mcp_server.pyparse import evaluated_value, parse_module

Scope = cst.FunctionDef | None

_DATACLASS_DECORATORS = {"dataclass", "dataclasses.dataclass", "chz.chz", "chz", "define", "attrs.define",
                         "attr.s", "attr.dataclass", "pydantic.dataclasses.dataclass"}
_PARSER_FACTORIES = {"HfArgumentParser", "TrlParser"}
_PARSE_METHODS = {"parse_args_into_dataclasses", "parse_args_and_config", "parse_yaml_file", "parse_json_file",
                  "parse_dict"}
_CONFIG_LOADERS = {"yaml.safe_load", "yaml.load", "yaml.full_load", "omegaconf.OmegaConf.load", "OmegaConf.load",
                   "json.load", "json.loads", "tomllib.load", "toml.load"}
_MAX_DEPTH = 12


@dataclass
class FieldDef:
    name: str
    default: cst.BaseExpression | None
    line: int
    annotation: str | None


@dataclass
class ClassInfo:
    name: str
    loc: Loc
    bases: list[str]
    decorators: list[str]
    fields: dict[str, FieldDef]
    node: cst.ClassDef

    @property
    def is_config(self) -> bool:
        return bool(self.fields) and (
            any(d in _DATACLASS_DECORATORS for d in self.decorators) or bool(self.bases)
        )


@dataclass
class ParamDef:
    name: str
    annotation: str | None
    default: cst.BaseExpression | None
    line: int


@dataclass
class FunctionInfo:
    name: str
    loc: Loc
    params: dict[str, ParamDef]
    node: cst.FunctionDef
    decorators: list[str]


@dataclass
class ArgDef:
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


@dataclass
class CallSite:
    src: "PySource"
    node: cst.Call
    qualname: str
    name: str
    scope: Scope
    loc: Loc
    awaited: bool = False
    assigned_to: str | None = None

    def kwarg_node(self, name: str) -> cst.BaseExpression | None:
        for arg in self.node.args:
            if arg.keyword is not None and arg.keyword.value == name:
                return arg.value
        return None

    def kwarg(self, name: str) -> Value | None:
        node = self.kwarg_node(name)
        return None if node is None else self.src.evaluate(node, self.scope)

    def keywords(self) -> list[str]:
        return [a.keyword.value for a in self.node.args if a.keyword is not None]

    def kwargs(self) -> dict[str, Value]:
        out = {}
        for arg in self.node.args:
            if arg.keyword is not None:
                value = self.src.evaluate(arg.value, self.scope)
                if value is not None:
                    out[arg.keyword.value] = value
        return out

    def arg_node(self, index: int) -> cst.BaseExpression | None:
        positional = [a.value for a in self.node.args if a.keyword is None and not a.star]
        return positional[index] if index < len(positional) else None

    def arg(self, index: int) -> Value | None:
        node = self.arg_node(index)
        return None if node is None else self.src.evaluate(node, self.scope)


# --- namespaces: what `x` is in `x.attr` ---------------------------------------------------------


@dataclass
class _ArgparseNS:
    pass


@dataclass
class _DataclassNS:
    class_name: str  # a class defined in this file, or a framework config class (e.g. "GRPOConfig")
    parsed: bool  # filled from the command line / config file (HfArgumentParser, TrlParser, chz)


@dataclass
class _InstanceNS:
    class_name: str
    call: CallSite


@dataclass
class _ConfigNS:
    config: YamlConfig | None
    prefix: str


def dotted_name(node: cst.CSTNode) -> str | None:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = dotted_name(node.value)
        return None if base is None else f"{base}.{node.attr.value}"
    return None


def literal_value(node: cst.BaseExpression):
    """A literal node's Python value. Quietly: a source's odd escapes ("\\d") are its business."""
    return evaluated_value(node)


def _string_node_value(node: cst.CSTNode) -> str | None:
    if isinstance(node, cst.SimpleString | cst.ConcatenatedString):
        value = literal_value(node)
        return value if isinstance(value, str) else None
    return None


class PySource:
    """A parsed Python file and everything the analyzers ask of it."""

    def __init__(self, text: str, label: str):
        self.label = label
        self.text = text
        self.module = parse_module(text, label)  # PythonSyntaxError (a MintMigrateError) names file:line:col
        self._lines = node_lines(self.module)
        self.imports: dict[str, str] = {}
        self.imported: list[tuple[str, Loc]] = []
        self.assigns: dict[str, list[Assignment]] = {}
        self.classes: dict[str, ClassInfo] = {}
        self.functions: dict[str, FunctionInfo] = {}
        self.calls: list[CallSite] = []
        self.attributes: list[tuple[str, Loc, cst.Attribute]] = []
        self.loops: list[tuple[str, cst.BaseExpression, Scope, Loc]] = []
        self.divisions: list[tuple[cst.BaseExpression, cst.BaseExpression, Scope, Loc]] = []
        self.argparse: dict[str, ArgDef] = {}
        self.set_defaults: dict[str, tuple[cst.BaseExpression, int]] = {}
        self.cli: dict[str, Value] = {}
        self.configs: list[YamlConfig] = []
        self._memo: dict[tuple[int, int], Value | None] = {}
        self._returns: dict[int, tuple[cst.BaseExpression, ...]] = {}
        self._collect()

    # -- positions --

    def line(self, node: cst.CSTNode) -> int:
        return self._lines.get(node, 1)

    def loc(self, node: cst.CSTNode) -> Loc:
        return Loc(self.label, self.line(node))

    # -- inputs from other files --

    def use_command_line(self, values: dict[str, Value]) -> None:
        """Flags the launch command passes to this script (normalised names -> values)."""
        self.cli = dict(values)
        self._memo.clear()

    def use_configs(self, configs: list[YamlConfig]) -> None:
        self.configs = list(configs)
        self._memo.clear()

    # -- collection --

    def _collect(self) -> None:
        collector = _Collector(self)
        collector.walk(self.module)
        for call in self.calls:
            call.awaited = id(call.node) in collector.awaited
            call.assigned_to = collector.assigned_calls.get(id(call.node))
        for call in self.calls:
            if call.name == "add_argument":
                self._argparse_def(call)
            elif call.name == "set_defaults":
                for arg in call.node.args:
                    if arg.keyword is not None:
                        self.set_defaults[arg.keyword.value] = (arg.value, self.line(arg.value))

    def _argparse_def(self, call: CallSite) -> None:
        options = [s for s in (_string_node_value(a.value) for a in call.node.args if a.keyword is None) if s]
        if not options:
            return
        longs = [o for o in options if o.startswith("--")]
        dest_node = call.kwarg_node("dest")
        dest = _string_node_value(dest_node) if dest_node is not None else None
        if dest is None:
            first = longs[0] if longs else options[0]
            dest = first.lstrip("-").replace("-", "_")
        type_node = call.kwarg_node("type")
        action = call.kwarg_node("action")
        self.argparse[dest] = ArgDef(
            dest=dest,
            options=[o.lstrip("-").replace("-", "_") for o in options],
            default=call.kwarg_node("default"),
            type_name=dotted_name(type_node) if type_node is not None else None,
            action=_string_node_value(action) if action is not None else None,
            line=self.line(call.node),
        )

    def qualify(self, dotted: str) -> str:
        head, _, rest = dotted.partition(".")
        full = self.imports.get(head)
        if full is None:
            return dotted
        return f"{full}.{rest}" if rest else full

    def imports_module(self, *prefixes: str) -> Loc | None:
        """Where the file imports a module starting with one of `prefixes` (e.g. "trl"), if it does."""
        for module, loc in self.imported:
            for prefix in prefixes:
                if module == prefix or module.startswith(prefix + "."):
                    return loc
        return None

    def calls_named(self, *names: str) -> list[CallSite]:
        wanted = set(names)
        return [c for c in self.calls if c.name in wanted]

    def docstring_commands(self) -> list[Command]:
        """Launch commands quoted in the module docstring or the comment block at the top."""
        commands: list[Command] = []
        if self.module.header:
            text = "\n".join(
                line.comment.value if line.comment else "" for line in self.module.header
            )
            commands += commands_in_text(text, self.label, 1)
        body = self.module.body
        if body and isinstance(body[0], cst.SimpleStatementLine) and body[0].body:
            expr = body[0].body[0]
            if isinstance(expr, cst.Expr) and isinstance(expr.value, cst.SimpleString):
                raw = expr.value.value
                quote = raw.lstrip("rRbBuUfF")
                q = 3 if quote[:3] in ('"""', "'''") else 1
                commands += commands_in_text(quote[q:-q], self.label, self.line(expr.value))
        return commands

    def parsed_dataclasses(self) -> list[tuple[str, Loc]]:
        """Classes handed to HfArgumentParser / TrlParser: their fields come from the command line."""
        out = []
        for call in self.calls:
            if call.name in _PARSER_FACTORIES and call.node.args:
                first = call.node.args[0].value
                items = first.elements if isinstance(first, cst.Tuple | cst.List) else [first]
                for item in items:
                    node = item.value if isinstance(item, cst.Element) else item
                    name = dotted_name(node)
                    if name:
                        out.append((name.rsplit(".", 1)[-1], call.loc))
        return out

    # -- evaluation --

    def evaluate(self, node: cst.BaseExpression, scope: Scope, depth: int = 0) -> Value | None:
        """The value of an expression when it can be known from the inputs, else None."""
        if depth > _MAX_DEPTH:
            return None
        key = (id(node), id(scope))
        if key in self._memo:
            return self._memo[key]
        self._memo[key] = None  # cycle guard
        result = self._evaluate(node, scope, depth)
        self._memo[key] = result
        return result

    def _evaluate(self, node: cst.BaseExpression, scope: Scope, depth: int) -> Value | None:
        loc = self.loc(node)
        if isinstance(node, cst.Integer | cst.Float):
            value = literal_value(node)
            return None if value is None else Value(value, loc, Level.CODE)
        if isinstance(node, cst.SimpleString | cst.ConcatenatedString):
            value = literal_value(node)
            return Value(value, loc, Level.CODE) if isinstance(value, str) else None
        if isinstance(node, cst.FormattedString):
            if all(isinstance(p, cst.FormattedStringText) for p in node.parts):
                return Value("".join(p.value for p in node.parts), loc, Level.CODE)
            return None
        if isinstance(node, cst.Name):
            if node.value in {"True", "False", "None"}:
                return Value({"True": True, "False": False, "None": None}[node.value], loc, Level.CODE)
            return self._name_value(node.value, scope, self.line(node), depth)
        if isinstance(node, cst.UnaryOperation):
            inner = self.evaluate(node.expression, scope, depth + 1)
            if inner is None:
                return None
            if isinstance(node.operator, cst.Minus) and _is_number(inner.value):
                return Value(-inner.value, inner.loc if inner.loc.line == loc.line else loc, inner.level)
            if isinstance(node.operator, cst.Plus) and _is_number(inner.value):
                return inner
            if isinstance(node.operator, cst.Not):
                return Value(not inner.value, loc, inner.level)
            return None
        if isinstance(node, cst.BinaryOperation):
            return self._binary(node, scope, depth, loc)
        if isinstance(node, cst.List | cst.Tuple | cst.Set):
            items = []
            level = Level.CODE
            for element in node.elements:
                if not isinstance(element, cst.Element):
                    return None
                value = self.evaluate(element.value, scope, depth + 1)
                if value is None:
                    return None
                items.append(value.value)
                level = min(level, value.level)
            return Value(items, loc, level)
        if isinstance(node, cst.Dict):
            out = {}
            level = Level.CODE
            for element in node.elements:
                if not isinstance(element, cst.DictElement):
                    return None
                k, v = self.evaluate(element.key, scope, depth + 1), self.evaluate(element.value, scope, depth + 1)
                if k is None or v is None:
                    return None
                out[k.value] = v.value
                level = min(level, v.level)
            return Value(out, loc, level)
        if isinstance(node, cst.Attribute | cst.Subscript):
            return self._member(node, scope, depth)
        if isinstance(node, cst.Call):
            return self._call_value(node, scope, depth, loc)
        return None

    def _binary(self, node: cst.BinaryOperation, scope: Scope, depth: int, loc: Loc) -> Value | None:
        left, right = self.evaluate(node.left, scope, depth + 1), self.evaluate(node.right, scope, depth + 1)
        if left is None or right is None:
            return None
        a, b, op = left.value, right.value, node.operator
        try:
            if _is_number(a) and _is_number(b):
                if isinstance(op, cst.Add):
                    value = a + b
                elif isinstance(op, cst.Subtract):
                    value = a - b
                elif isinstance(op, cst.Multiply):
                    value = a * b
                elif isinstance(op, cst.Divide):
                    value = a / b
                elif isinstance(op, cst.FloorDivide):
                    value = a // b
                elif isinstance(op, cst.Modulo):
                    value = a % b
                elif isinstance(op, cst.Power):
                    value = a**b
                else:
                    return None
            elif isinstance(op, cst.Add) and type(a) is type(b) and isinstance(a, str | list):
                value = a + b
            else:
                return None
        except (ZeroDivisionError, OverflowError):
            return None
        return Value(value, loc, min(left.level, right.level))

    def _call_value(self, node: cst.Call, scope: Scope, depth: int, loc: Loc) -> Value | None:
        name = dotted_name(node.func)
        if name is None:
            return None
        qual = self.qualify(name)
        args = [a for a in node.args if a.keyword is None and not a.star]
        if qual in {"int", "float", "str", "bool"} and len(args) == 1:
            inner = self.evaluate(args[0].value, scope, depth + 1)
            if inner is None:
                return None
            try:
                return inner.with_value({"int": int, "float": float, "str": str, "bool": bool}[qual](inner.value))
            except (TypeError, ValueError):
                return None
        if qual in {"os.environ.get", "os.getenv"} and len(args) >= 2:
            default = self.evaluate(args[1].value, scope, depth + 1)
            return None if default is None else Value(default.value, default.loc, Level.DEFAULT)
        if qual == "dict" and not args:
            out, level = {}, Level.CODE
            for arg in node.args:
                if arg.keyword is None:
                    return None
                value = self.evaluate(arg.value, scope, depth + 1)
                if value is None:
                    return None
                out[arg.keyword.value] = value.value
                level = min(level, value.level)
            return Value(out, loc, level)
        return None

    def _name_value(self, name: str, scope: Scope, use_line: int, depth: int) -> Value | None:
        found = self.definition(name, scope, use_line)
        if found is None:
            return None
        kind, obj, def_scope = found
        if kind == "param":
            param: ParamDef = obj
            if param.default is None:
                return None
            value = self.evaluate(param.default, def_scope, depth + 1)
            return None if value is None else Value(value.value, value.loc, Level.DEFAULT)
        assignment: Assignment = obj
        if len(assignment.targets) != 1:
            return None
        return self.evaluate(assignment.value, assignment.scope, depth + 1)

    def definition(self, name: str, scope: Scope, use_line: int):
        """("assign", Assignment, scope) or ("param", ParamDef, scope) for a name used at `use_line`."""
        scopes = [scope, None] if scope is not None else [None]
        for s in scopes:
            if s is not None:
                fn = self._function_of(s)
                if fn is not None and name in fn.params and not any(
                    a.scope is s for a in self.assigns.get(name, [])
                ):
                    return ("param", fn.params[name], s)
            candidates = [a for a in self.assigns.get(name, []) if a.scope is s]
            if not candidates:
                continue
            before = [a for a in candidates if a.line <= use_line]
            chosen = before[-1] if (before and s is scope) else candidates[-1]
            return ("assign", chosen, s)
        return None

    def _function_of(self, node: cst.FunctionDef) -> FunctionInfo | None:
        for fn in self.functions.values():
            if fn.node is node:
                return fn
        return None

    # -- attribute / subscript access --

    def _member(self, node: cst.Attribute | cst.Subscript, scope: Scope, depth: int) -> Value | None:
        if isinstance(node, cst.Attribute):
            base, key = node.value, node.attr.value
        else:
            if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
                return None
            key_value = self.evaluate(node.slice[0].slice.value, scope, depth + 1)
            if key_value is None or not isinstance(key_value.value, str | int):
                return None
            base, key = node.value, key_value.value
        ns = self.namespace(base, scope, depth + 1)
        if ns is None:
            if isinstance(node, cst.Subscript):
                container = self.evaluate(base, scope, depth + 1)
                if container is not None and isinstance(container.value, dict | list):
                    try:
                        return container.with_value(container.value[key])
                    except (KeyError, IndexError, TypeError):
                        return None
            return None
        return self._ns_value(ns, str(key), depth)

    def namespace(self, node: cst.BaseExpression, scope: Scope, depth: int = 0):
        """What kind of object `node` is, when it holds settings: argparse args, a dataclass, a config."""
        if depth > _MAX_DEPTH:
            return None
        if isinstance(node, cst.Name):
            found = self.definition(node.value, scope, self.line(node))
            if found is None:
                info = self.classes.get(node.value)
                return _DataclassNS(node.value, parsed=False) if info is not None else None
            kind, obj, def_scope = found
            if kind == "param":
                if obj.annotation:
                    return _DataclassNS(obj.annotation.rsplit(".", 1)[-1], parsed=True)
                return None
            return self._namespace_of_assignment(obj, node.value, depth)
        if isinstance(node, cst.Attribute | cst.Subscript):
            if isinstance(node, cst.Attribute):
                key = node.attr.value
                base = node.value
            else:
                if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
                    return None
                key_value = self.evaluate(node.slice[0].slice.value, scope, depth + 1)
                if key_value is None:
                    return None
                key, base = str(key_value.value), node.value
            ns = self.namespace(base, scope, depth + 1)
            if isinstance(ns, _ConfigNS):
                return _ConfigNS(ns.config, f"{ns.prefix}{key}.")
            return None
        if isinstance(node, cst.Call):
            return self._namespace_of_call(node, scope, depth, index=None)
        return None

    def _namespace_of_assignment(self, assignment: Assignment, name: str, depth: int):
        value = assignment.value
        index = assignment.targets.index(name) if len(assignment.targets) > 1 else None
        if isinstance(value, cst.Subscript) and isinstance(value.value, cst.Call) and len(value.slice) == 1:
            sub = value.slice[0].slice
            if isinstance(sub, cst.Index) and isinstance(sub.value, cst.Integer):
                return self._namespace_of_call(value.value, assignment.scope, depth, int(sub.value.value))
        if isinstance(value, cst.Call):
            return self._namespace_of_call(value, assignment.scope, depth, index)
        if index is None:
            return self.namespace(value, assignment.scope, depth + 1)
        return None

    def _namespace_of_call(self, node: cst.Call, scope: Scope, depth: int, index: int | None):
        name = dotted_name(node.func)
        if name is None:
            return None
        short = name.rsplit(".", 1)[-1]
        qual = self.qualify(name)
        if short in {"parse_args", "parse_known_args"}:
            return _ArgparseNS()
        if short in _PARSE_METHODS:
            classes = self._parser_classes(node.func, scope)
            if classes:
                i = 0 if index is None else index
                if i < len(classes):
                    return _DataclassNS(classes[i], parsed=True)
            return None
        if qual in _CONFIG_LOADERS or short in {"safe_load", "load_config"} or qual.endswith("OmegaConf.load"):
            return _ConfigNS(self._config_for(node, scope), "")
        if short in {"entrypoint", "nested_entrypoint"} and node.args:
            target = dotted_name(node.args[0].value)
            if target:
                return _DataclassNS(target.rsplit(".", 1)[-1], parsed=True)
        fn = self.functions.get(short)
        if fn is not None and depth < _MAX_DEPTH:  # `args = get_args()` where get_args returns parser.parse_args()
            returns = self._returns.get(id(fn.node))
            if returns is None:
                returns = self._returns[id(fn.node)] = _returned(fn.node)
            for returned in returns:
                ns = self.namespace(returned, fn.node, depth + 1)
                if ns is not None:
                    return ns
            return None
        if short in self.classes or short[:1].isupper():
            site = next((c for c in self.calls if c.node is node), None)
            if site is not None:
                return _InstanceNS(short, site)
        return None

    def _parser_classes(self, func: cst.BaseExpression, scope: Scope) -> list[str]:
        """The dataclasses behind `parser.parse_args_into_dataclasses()`."""
        if not isinstance(func, cst.Attribute):
            return []
        owner = func.value
        call: cst.BaseExpression | None = owner
        if isinstance(owner, cst.Name):
            found = self.definition(owner.value, scope, self.line(owner))
            call = found[1].value if found and found[0] == "assign" else None
        if not isinstance(call, cst.Call) or (dotted_name(call.func) or "").rsplit(".", 1)[-1] not in _PARSER_FACTORIES:
            return []
        if not call.args:
            return []
        first = call.args[0].value
        items = first.elements if isinstance(first, cst.Tuple | cst.List) else [first]
        out = []
        for item in items:
            node = item.value if isinstance(item, cst.Element) else item
            name = dotted_name(node)
            if name:
                out.append(name.rsplit(".", 1)[-1])
        return out

    def _config_for(self, node: cst.Call, scope: Scope) -> YamlConfig | None:
        if not self.configs:
            return None
        names = []
        for sub in _walk_strings(node):
            names.append(sub.rsplit("/", 1)[-1])
        for config in self.configs:
            if config.label.rsplit("/", 1)[-1] in names:
                return config
        return self.configs[0]

    def _ns_value(self, ns, key: str, depth: int) -> Value | None:
        if isinstance(ns, _ArgparseNS):
            return self.argparse_value(key)
        if isinstance(ns, _ConfigNS):
            if ns.config is None:
                return None
            return ns.config.get(ns.prefix + key)
        if isinstance(ns, _InstanceNS):
            value = ns.call.kwarg(key)
            if value is not None:
                return value
            return self.field_value(ns.class_name, key, parsed=False)
        if isinstance(ns, _DataclassNS):
            return self.field_value(ns.class_name, key, parsed=ns.parsed)
        return None

    def argparse_value(self, dest: str) -> Value | None:
        arg = self.argparse.get(dest)
        names = {dest} | set(arg.options if arg else [])
        for name in names:
            if name in self.cli:
                value = self.cli[name]
                if arg is not None and arg.type_name in {"int", "float"} and isinstance(value.value, str):
                    try:
                        value = value.with_value({"int": int, "float": float}[arg.type_name](value.value))
                    except ValueError:
                        pass
                if arg is not None and arg.action == "store_false" and value.value is True:
                    value = value.with_value(False)
                return value
        if dest in self.set_defaults:
            node, _ = self.set_defaults[dest]
            value = self.evaluate(node, None)
            return None if value is None else Value(value.value, value.loc, Level.DEFAULT)
        if arg is None:
            return None
        if arg.default is None:
            if arg.action in {"store_true", "store_false"}:
                return Value(arg.action == "store_false", Loc(self.label, arg.line), Level.DEFAULT)
            return None
        value = self.evaluate(arg.default, None)
        if value is None:
            return None
        if arg.type_name in {"int", "float"} and isinstance(value.value, str):
            try:
                value = value.with_value({"int": int, "float": float}[arg.type_name](value.value))
            except ValueError:
                return None
        return Value(value.value, value.loc, Level.DEFAULT)

    def field_value(self, class_name: str, key: str, *, parsed: bool) -> Value | None:
        """A dataclass field: the command line, then a config file when the class is parsed from
        them, then the default the class declares (following base classes defined here)."""
        if parsed:
            if key in self.cli:
                return self.cli[key]
            for config in self.configs:
                if key in config:
                    return config.get(key)
        info = self.classes.get(class_name)
        seen = set()
        while info is not None and info.name not in seen:
            seen.add(info.name)
            fdef = info.fields.get(key)
            if fdef is not None:
                if fdef.default is None:
                    return None
                value = self._field_default(fdef)
                return None if value is None else Value(value.value, value.loc, Level.DEFAULT)
            info = next((self.classes[b.rsplit(".", 1)[-1]] for b in info.bases
                         if b.rsplit(".", 1)[-1] in self.classes), None)
        return None

    def _field_default(self, fdef: FieldDef) -> Value | None:
        node = fdef.default
        if isinstance(node, cst.Call) and (dotted_name(node.func) or "").rsplit(".", 1)[-1] == "field":
            for arg in node.args:
                if arg.keyword is not None and arg.keyword.value == "default":
                    return self.evaluate(arg.value, None)
                if arg.keyword is not None and arg.keyword.value == "default_factory":
                    factory = arg.value
                    if isinstance(factory, cst.Lambda):
                        return self.evaluate(factory.body, None)
                    if isinstance(factory, cst.Name) and factory.value in {"list", "dict"}:
                        return Value([] if factory.value == "list" else {}, self.loc(factory), Level.CODE)
            return None
        return self.evaluate(node, None)

    def class_base(self, class_name: str, known: set[str]) -> str | None:
        """The first class in `known` that `class_name` is or derives from (within this file)."""
        seen = set()
        todo = [class_name]
        while todo:
            name = todo.pop(0).rsplit(".", 1)[-1]
            if name in known:
                return name
            if name in seen or name not in self.classes:
                continue
            seen.add(name)
            todo.extend(self.classes[name].bases)
        return None

    def assigned_call(self, node: cst.BaseExpression, scope: Scope) -> "CallSite | None":
        """For `model` in `Trainer(model=model)`: the call that produced it (`X.from_pretrained(...)`)."""
        if isinstance(node, cst.Call):
            return next((c for c in self.calls if c.node is node), None)
        if isinstance(node, cst.Name):
            found = self.definition(node.value, scope, self.line(node))
            if found and found[0] == "assign" and isinstance(found[1].value, cst.Call | cst.Name):
                if isinstance(found[1].value, cst.Name) and found[1].value.value == node.value:
                    return None
                return self.assigned_call(found[1].value, found[1].scope)
        return None


def iter_nodes(node: cst.CSTNode, *, into_functions: bool = True):
    """Every node under `node` (itself included), depth first, without libcst's rebuilding visitor."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        if not into_functions and isinstance(current, cst.FunctionDef) and current is not node:
            continue
        children = []
        for name in _child_fields(type(current)):
            value = getattr(current, name)
            if isinstance(value, cst.CSTNode):
                children.append(value)
            elif isinstance(value, tuple | list):
                children.extend(item for item in value if isinstance(item, cst.CSTNode))
        stack.extend(reversed(children))


def _returned(fn: cst.FunctionDef) -> tuple[cst.BaseExpression, ...]:
    """The expressions a function returns (not those of functions nested in it)."""
    return tuple(n.value for n in iter_nodes(fn, into_functions=False)
                 if isinstance(n, cst.Return) and n.value is not None)


def _walk_strings(node: cst.CSTNode) -> list[str]:
    out = []
    for n in iter_nodes(node):
        if isinstance(n, cst.SimpleString):
            value = literal_value(n)
            if isinstance(value, str):
                out.append(value)
    return out


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


# --- the collecting visitor ------------------------------------------------------------------------


# Fields that only hold whitespace, punctuation or comments: never worth walking into.
_SKIP_FIELDS = {"lpar", "rpar", "comma", "semicolon", "leading_lines", "lines_after_decorators", "header", "footer",
                "trailing_whitespace", "equal", "colon", "dot", "star", "lbracket", "rbracket", "lbrace", "rbrace",
                "asynchronous", "first_line", "empty_lines", "newline", "whitespace", "operator"}
_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}


def _child_fields(node_type: type) -> tuple[str, ...]:
    names = _CHILD_FIELDS.get(node_type)
    if names is None:
        names = tuple(f.name for f in dataclasses.fields(node_type)
                      if f.name not in _SKIP_FIELDS and not f.name.startswith("whitespace"))
        _CHILD_FIELDS[node_type] = names
    return names


class _Collector:
    """One pass over the tree collecting what the analyzers ask for.

    It walks the nodes' dataclass fields directly: libcst's visitor machinery rebuilds every node
    it passes through (it is shared with transformers), which costs several times the parse itself."""

    def __init__(self, src: PySource):
        self.src = src
        self.functions: list[cst.FunctionDef] = []
        self.class_depth: list[ClassInfo | None] = []
        self.awaited: set[int] = set()
        self.assigned_calls: dict[int, str] = {}

    @property
    def scope(self) -> Scope:
        return self.functions[-1] if self.functions else None

    def walk(self, node: cst.CSTNode) -> None:
        enter = _ENTER.get(type(node))
        if enter is not None:
            enter(self, node)
        for name in _child_fields(type(node)):
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

    def _in_class_body(self) -> bool:
        return bool(self.class_depth) and self.class_depth[-1] is not None

    # imports

    def visit_Import(self, node: cst.Import) -> None:
        loc = self.src.loc(node)
        for alias in node.names:
            name = dotted_name(alias.name) or ""
            self.src.imported.append((name, loc))
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                self.src.imports[alias.asname.name.value] = name
            else:
                head = name.split(".")[0]
                self.src.imports.setdefault(head, head)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        loc = self.src.loc(node)
        module = dotted_name(node.module) if node.module is not None else ""
        module = "." * len(node.relative) + (module or "")
        self.src.imported.append((module, loc))
        if isinstance(node.names, cst.ImportStar):
            return
        for alias in node.names:
            name = dotted_name(alias.name) or ""
            local = alias.asname.name.value if alias.asname is not None and isinstance(alias.asname.name, cst.Name) else name
            self.src.imports[local] = f"{module}.{name}" if module else name
            self.src.imported.append((f"{module}.{name}", loc))

    # scopes

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        params = {}
        for param in [*node.params.params, *node.params.kwonly_params, *node.params.posonly_params]:
            annotation = dotted_name(param.annotation.annotation) if param.annotation else None
            if isinstance(param.annotation.annotation if param.annotation else None, cst.SimpleString):
                annotation = literal_value(param.annotation.annotation)
            params[param.name.value] = ParamDef(param.name.value, annotation, param.default, self.src.line(param))
        if not self.functions and not self._in_class_body():
            self.src.functions[node.name.value] = FunctionInfo(
                node.name.value, self.src.loc(node), params, node,
                [dotted_name(d.decorator) or dotted_name(getattr(d.decorator, "func", None) or d.decorator) or ""
                 for d in node.decorators],
            )
        else:
            self.src.functions.setdefault(f"{node.name.value}@{self.src.line(node)}", FunctionInfo(
                node.name.value, self.src.loc(node), params, node, []))
        self.functions.append(node)
        self.class_depth.append(None)

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.functions.pop()
        self.class_depth.pop()

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        decorators = []
        for d in node.decorators:
            target = d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator
            decorators.append(self.src.qualify(dotted_name(target) or ""))
            decorators.append(dotted_name(target) or "")
        info = ClassInfo(
            name=node.name.value,
            loc=self.src.loc(node),
            bases=[dotted_name(b.value) or "" for b in node.bases],
            decorators=decorators,
            fields={},
            node=node,
        )
        self.src.classes[node.name.value] = info
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
                node.target.value, node.value, self.src.line(node), annotation
            )
            return
        if node.value is not None:
            self._assign((node.target.value,), node.value, node)

    def visit_Assign(self, node: cst.Assign) -> None:
        if self._in_class_body():
            for target in node.targets:
                if isinstance(target.target, cst.Name):
                    self.class_depth[-1].fields.setdefault(
                        target.target.value, FieldDef(target.target.value, node.value, self.src.line(node), None)
                    )
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

    def _assign(self, names: tuple[str, ...], value: cst.BaseExpression, node: cst.CSTNode) -> None:
        assignment = Assignment(self.scope, names, value, self.src.line(node))
        for name in names:
            if name != "_":
                self.src.assigns.setdefault(name, []).append(assignment)

    # calls and expressions

    def visit_Await(self, node: cst.Await) -> None:
        if isinstance(node.expression, cst.Call):
            self.awaited.add(id(node.expression))

    def visit_Call(self, node: cst.Call) -> None:
        name = dotted_name(node.func)
        if name is None:
            if isinstance(node.func, cst.Attribute):
                name = f"?.{node.func.attr.value}"
            else:
                return
        qual = self.src.qualify(name) if not name.startswith("?") else name
        self.src.calls.append(CallSite(self.src, node, qual, qual.rsplit(".", 1)[-1], self.scope, self.src.loc(node)))

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self.src.attributes.append((node.attr.value, self.src.loc(node.attr), node))

    def visit_For(self, node: cst.For) -> None:
        if isinstance(node.target, cst.Name):
            self.src.loops.append((node.target.value, node.iter, self.scope, self.src.loc(node)))

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if isinstance(node.operator, cst.Divide):
            self.src.divisions.append((node.left, node.right, self.scope, self.src.loc(node)))


_ENTER = {
    cst.Import: _Collector.visit_Import, cst.ImportFrom: _Collector.visit_ImportFrom,
    cst.FunctionDef: _Collector.visit_FunctionDef, cst.ClassDef: _Collector.visit_ClassDef,
    cst.AnnAssign: _Collector.visit_AnnAssign, cst.Assign: _Collector.visit_Assign, cst.Await: _Collector.visit_Await,
    cst.Call: _Collector.visit_Call, cst.Attribute: _Collector.visit_Attribute, cst.For: _Collector.visit_For,
    cst.BinaryOperation: _Collector.visit_BinaryOperation,
}
_LEAVE = {cst.FunctionDef: _Collector.leave_FunctionDef, cst.ClassDef: _Collector.leave_ClassDef}

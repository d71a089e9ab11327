"""Values of Python expressions, read from a file's shared index (mint_migrate/pyindex.py).

Values are resolved on demand: literals, module-level and function-local constants, arithmetic on
them, `args.x` from argparse (the launch command's flag when it sets one, else the argparse
default), `cfg.x` from dataclasses (HfArgumentParser / TrlParser / chz / a plain `Config(...)`
instance), `os.environ.get(K, default)` and `cfg["a"]["b"]` / `cfg.a.b` from a YAML file the script
loads. Each resolved value keeps the line it came from, and a level saying how binding it is (see
evidence.Level). The command line and the config files are bound to the source from outside
(`use_command_line`, `use_configs`): inputs.py links them.
"""

import posixpath
from dataclasses import dataclass
from typing import Any

import libcst as cst

from mint_migrate import arithmetic
from mint_migrate.analyze.evidence import Level, Loc, Value
from mint_migrate.analyze.yamlconf import YamlConfig
from mint_migrate.pyindex import (
    Assignment,
    Call,
    FieldDef,
    FunctionInfo,
    ParamDef,
    PyIndex,
    Scope,
    dotted_name,
    field_default,
    iter_nodes,
    literal_value,
)

# Names a program gives the config object it reads (`self.cfg.train.lr`, `config.model.name`).
_CONFIG_ROOTS = {"cfg", "config", "conf", "hparams", "hp", "settings"}
_PARSER_FACTORIES = {"HfArgumentParser", "TrlParser", "H4ArgumentParser"}
_PARSE_METHODS = {"parse_args_into_dataclasses", "parse_args_and_config", "parse_yaml_file", "parse_json_file",
                  "parse_dict", "parse"}
_CONFIG_LOADERS = {"yaml.safe_load", "yaml.load", "yaml.full_load", "omegaconf.OmegaConf.load", "OmegaConf.load",
                   "json.load", "json.loads", "tomllib.load", "toml.load"}
_MAX_DEPTH = 12
_MAX_CONCAT = 100_000  # characters or items a constant string or list may reach by `+`
_ARITHMETIC = {cst.Add: "+", cst.Subtract: "-", cst.Multiply: "*", cst.Divide: "/", cst.FloorDivide: "//",
               cst.Modulo: "%", cst.Power: "**"}


@dataclass
class CallSite(Call):
    """A call of the index, able to evaluate its arguments."""

    src: "PySource | None" = None
    loc: Loc | None = None

    def keyword_sources(self) -> list[tuple[str, cst.BaseExpression, "PySource", Scope]]:
        """The call's keyword arguments with the file and scope each is written in, those it splats from
        a dict built just for it included (`kwargs = dict(lr=5e-6, ...)` then `GRPOConfig(**kwargs)`, or
        `SFTConfig(**SFT_CONFIG)` with the dict in the config module the script imports)."""
        out = [(a.keyword.value, a.value, self.src, self.scope) for a in self.node.args if a.keyword is not None]
        for arg in self.node.args:
            if arg.star == "**" and isinstance(arg.value, cst.Name) and self.src is not None:
                out += self.src.dict_entries(arg.value.value, self.scope, self.src.line(arg.value))
        return out

    def keyword_args(self) -> list[tuple[str, cst.BaseExpression]]:
        return [(key, node) for key, node, _src, _scope in self.keyword_sources()]

    def kwarg_node(self, name: str) -> cst.BaseExpression | None:
        return next((node for key, node in self.keyword_args() if key == name), None)

    def keywords(self) -> list[str]:
        return [key for key, _ in self.keyword_args()]

    def kwarg(self, name: str) -> Value | None:
        return next((src.evaluate(node, scope) for key, node, src, scope in self.keyword_sources() if key == name),
                    None)

    def kwargs(self) -> dict[str, Value]:
        out = {}
        for key, node, src, scope in self.keyword_sources():
            value = src.evaluate(node, scope)
            if value is not None:
                out[key] = value
        return out

    def arg(self, index: int) -> Value | None:
        node = self.arg_node(index)
        return None if node is None else self.src.evaluate(node, self.scope)

    def in_evaluation(self) -> bool:
        """Made by an evaluation, validation, test, prediction or generation-logging function: not the
        training's own step."""
        caller = self.src.function_of(self.scope) if self.scope is not None else None
        name = caller.name.rsplit(".", 1)[-1].lower() if caller is not None else ""
        return any(word in name for word in _EVALUATION_WORDS)

    def switched_off(self) -> bool:
        """True when an `if` around the call is known to skip it (`if cfg.use_peft:` with
        `use_peft: false` in the config); unknown tests leave the call in."""
        return self.src.switched_off(self.guards, self.scope)

    def discarded(self) -> bool:
        """Its result is bound to a name the file never uses again (`peft_config = LoraConfig(...)` with
        the trainer's `# peft_config=peft_config` commented out): built, then never handed to anything."""
        if not self.assigned_to:
            return False
        return self.src.name_uses().get(self.assigned_to, 0) <= 1


# --- namespaces: what `x` is in `x.attr` ---------------------------------------------------------


# Parameter names that carry a script's parsed command line into its functions (`def main(args)`).
_ARGS_PARAMS = {"args", "opt", "opts", "arguments", "cli_args", "parsed_args", "flags", "hparams"}


# Tests of what is on disk (`os.path.exists(p)`, `Path(p).is_file()`): an assignment under one is a
# fallback for a machine's state, not the setting the script states.
_FILESYSTEM_TESTS = ("exists", "isfile", "isdir", "is_file", "is_dir", "access")


# A command-line parameter declared by its default's call (typer's, click's): `lr: float = typer.Option(1e-5, help=...)`.
_OPTION_CALLS = {"Option", "Argument"}


def option_default(node: cst.BaseExpression) -> cst.BaseExpression:
    """The default a parameter declares: `typer.Option(1e-5, "--lr")` declares 1e-5."""
    if isinstance(node, cst.Call) and (dotted_name(node.func) or "").rsplit(".", 1)[-1] in _OPTION_CALLS:
        given = next((a.value for a in node.args if a.keyword is not None and a.keyword.value == "default"), None)
        first = node.args[0].value if node.args and node.args[0].keyword is None else None
        return given or first or node
    return node


def on_the_filesystem(guards: tuple[tuple[cst.BaseExpression, bool], ...]) -> bool:
    """Under an `if` that asks the machine's filesystem (`if not os.path.exists(path):`)."""
    return any(isinstance(n, cst.Call) and (dotted_name(n.func) or "").rsplit(".", 1)[-1] in _FILESYSTEM_TESTS
               for test, _holds in guards for n in iter_nodes(test))


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



def unpacked(assignment: Assignment, name: str) -> cst.BaseExpression | None:
    """The expression `name` is bound to: the whole value, or its element of a tuple written out
    (`STEPS, GROUP, LR = 100, 4, 5e-6`); None for an unpacking of anything else."""
    if len(assignment.targets) == 1:
        return assignment.value
    value = assignment.value
    if isinstance(value, cst.Tuple | cst.List) and len(value.elements) == len(assignment.targets) \
            and not any(isinstance(e, cst.StarredElement) for e in value.elements):
        return value.elements[assignment.targets.index(name)].value
    return None


# Annotations that say nothing of where a parameter's settings come from (`def train(config: Dict)`):
# its value is what the caller passes.
_PLAIN_TYPES = {"dict", "Dict", "Mapping", "MutableMapping", "Any", "object"}
# Words in the name of a function that evaluates, tests or logs rather than trains.
_EVALUATION_WORDS = ("eval", "valid", "test", "benchmark", "predict", "infer", "demo", "log_gen")
# Calls that return where the script runs or whose home it is.
_ROOT_CALLS = {"getcwd", "cwd", "home", "expanduser"}


def _positional(call: Call, params: list[str], name: str) -> cst.BaseExpression | None:
    """The argument a call passes by position for parameter `name`."""
    return call.arg_node(params.index(name)) if name in params else None


def _path_parts(node: cst.BaseExpression) -> list[cst.BaseExpression]:
    """`a / b / c` as [a, b, c]."""
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Divide):
        return [*_path_parts(node.left), node.right]
    return [node]


class PySource:
    """A Python file's index plus what the analyzers ask of it: located values."""

    def __init__(self, text: str, label: str, index: PyIndex | None = None):
        self.label = label
        self.text = text
        self.index = index if index is not None else PyIndex.of(text, label)
        self.module = self.index.module
        ix = self.index
        self.imports = ix.imports
        self.assigns = ix.assigns
        self.classes = ix.classes
        self.functions = ix.functions
        self.argparse = ix.argparse
        self.set_defaults = ix.set_defaults
        self.imported: list[tuple[str, Loc]] = [(m, self.at(line)) for m, line in ix.imported]
        self.calls: list[CallSite] = [
            CallSite(c.node, c.qualname, c.name, c.scope, c.line, c.awaited, c.assigned_to, c.guards, src=self, loc=self.at(c.line))
            for c in ix.calls
        ]
        self.attributes = [(name, self.at(line), node) for name, line, node in ix.attributes]
        self.loops = [(name, it, scope, self.at(line)) for name, it, scope, line in ix.loops]
        self.divisions = [(left, right, scope, self.at(line)) for left, right, scope, line in ix.divisions]
        self.cli: dict[str, Value] = {}
        self.configs: list[YamlConfig] = []
        self.hydra: YamlConfig | None = None  # the composed config a `@hydra.main` function receives
        # the scripts that import this module and hand it their settings (`train(Config(lr=args.lr))`)
        self.importers: list[PySource] = []
        self.own_modules: dict[str, PySource] = {}  # the project's modules it imports, by dotted name
        self._memo: dict[tuple[int, int], Value | None] = {}
        self._returns: dict[int, tuple[cst.BaseExpression, ...]] = {}
        self._name_uses: dict[str, int] | None = None
        self._env_params: dict[str, str | None] = {}  # function name -> the parameter it passes as the env default

    def dict_entries(self, name: str, scope: Scope,
                     use_line: int) -> list[tuple[str, cst.BaseExpression, "PySource", Scope]]:
        """`name`'s entries when it is bound to `dict(k=v, ...)` or a `{"k": v}` literal, here or in a
        module of the project's this file imports it from: (key, value node, its file, its scope)."""
        found = self.definition(name, scope, use_line)
        if not found:
            imported = self.imported_from(name)
            return imported[0].dict_entries(imported[1], None, 10**9) if imported is not None else []
        if found[0] != "assign":
            return []
        value, where = found[1].value, found[1].scope
        if isinstance(value, cst.Call) and dotted_name(value.func) == "dict":
            return [(a.keyword.value, a.value, self, where) for a in value.args if a.keyword is not None]
        if isinstance(value, cst.Dict):
            return [(key, e.value, self, where) for e in value.elements if isinstance(e, cst.DictElement)
                    and isinstance(key := literal_value(e.key), str)]
        return []

    def imported_from(self, name: str) -> "tuple[PySource, str] | None":
        """For `from config import SFT_CONFIG`: the module's file, when the inputs hold it, and the name there."""
        module, _, original = self.imports.get(name, "").rpartition(".")
        other = self.own_modules.get(module)
        return (other, original) if other is not None and other is not self else None

    def attribute_writes(self, owner: str) -> list[tuple[str, Value]]:
        """What the code sets on the object `owner` names after building it (`args.lr = 1e-5`,
        `setattr(args, "lr", 1e-5)`), in source order: (attribute, value)."""
        found: list[tuple[int, str, Value | None]] = [
            (a.line, a.targets[0], self.evaluate(a.value, a.scope)) for a in self.index.attribute_assigns.get(owner, [])]
        for call in self.calls_named("setattr"):
            target, key = call.arg_node(0), call.arg(1)
            if isinstance(target, cst.Name) and target.value == owner and key is not None and isinstance(key.value, str):
                found.append((call.loc.line, key.value, call.arg(2)))
        return [(key, value) for _line, key, value in sorted(found, key=lambda f: f[0]) if value is not None]

    def used_beyond_print(self, name: str) -> bool:
        """`name` (bound by an import) is used by more than its import and the `print` calls that show it."""
        printed = sum(isinstance(n, cst.Name) and n.value == name
                      for c in self.calls_named("print") for n in iter_nodes(c.node))
        return self.name_uses().get(name, 0) - 1 - printed > 0

    def name_uses(self) -> dict[str, int]:
        """How often each name occurs in the code, binding included (`x = ...; f(x)`: 2); an
        attribute (`obj.x`) is not a use of `x`, a name in an f-string is."""
        if self._name_uses is None:
            attrs: set[int] = set()  # an Attribute comes before its `.attr` Name in iter_nodes' order
            counts: dict[str, int] = {}
            for node in iter_nodes(self.module):
                if isinstance(node, cst.Attribute):
                    attrs.add(id(node.attr))
                elif isinstance(node, cst.Name) and id(node) not in attrs:
                    counts[node.value] = counts.get(node.value, 0) + 1
            self._name_uses = counts
        return self._name_uses

    # -- positions --

    def line(self, node: cst.CSTNode) -> int:
        return self.index.line(node)

    def loc(self, node: cst.CSTNode) -> Loc:
        return Loc(self.label, self.line(node))

    def at(self, line: int) -> Loc:
        return Loc(self.label, line)

    # -- inputs from other files --

    def use_command_line(self, values: dict[str, Value]) -> None:
        """Flags the launch command passes to this script (normalised names -> values)."""
        self.cli = dict(values)
        self._memo.clear()

    def use_configs(self, configs: list[YamlConfig]) -> None:
        self.configs = list(configs)
        self._memo.clear()

    def use_hydra(self, config: YamlConfig) -> None:
        self.hydra = config
        self._memo.clear()

    def imported_by(self, importer: "PySource", module: str) -> None:
        """`importer` imports this file as `module`: its names resolve here (`from config import LR`), and
        the classes it builds hold what it gives them (`DPOConfig(beta=args.beta)` is this module's `cfg.beta`)."""
        if importer is self:
            return
        importer.own_modules[module] = self
        importer._memo.clear()
        if importer not in self.importers:
            self.importers.append(importer)
            self._memo.clear()

    # -- lookups --

    def qualify(self, dotted: str) -> str:
        return self.index.qualify(dotted)

    def imports_module(self, *prefixes: str) -> Loc | None:
        """Where the file imports a module starting with one of `prefixes` (e.g. "trl"), if it does."""
        line = self.index.import_line(*prefixes)
        return None if line is None else self.at(line)

    def imports_wrapper_of(self, *names: str) -> Loc | None:
        """Where the file imports a package that wraps a framework under its own namespace."""
        line = self.index.import_component_line(*names)
        return None if line is None else self.at(line)

    def calls_named(self, *names: str) -> list[CallSite]:
        wanted = set(names)
        return [c for c in self.calls if c.name in wanted]

    def parsed_dataclasses(self) -> list[tuple[str, Loc]]:
        """Classes handed to HfArgumentParser / TrlParser (or a parser derived from them): their
        fields come from the command line or a config file. The classes may be given as a tuple, a
        variable holding one, or `dataclass_types=`."""
        out = []
        for call in self.calls:
            if not self._is_parser_factory(call.name):
                continue
            node = call.kwarg_node("dataclass_types") or call.arg_node(0)
            for name in self._class_names(node, call.scope):
                out.append((name, call.loc))
        return out

    def _is_parser_factory(self, name: str) -> bool:
        return name in _PARSER_FACTORIES or self.class_base(name, _PARSER_FACTORIES) is not None

    def _class_names(self, node: cst.BaseExpression | None, scope: Scope, depth: int = 0) -> list[str]:
        if node is None or depth > 3:
            return []
        if isinstance(node, cst.Name) and node.value not in self.classes:
            found = self.definition(node.value, scope, self.line(node))
            if found is not None and found[0] == "assign" and len(found[1].targets) == 1:
                return self._class_names(found[1].value, found[1].scope, depth + 1)
        items = node.elements if isinstance(node, cst.Tuple | cst.List) else [node]
        out = []
        for item in items:
            name = dotted_name(item.value if isinstance(item, cst.Element) else item)
            if name:
                out.append(name.rsplit(".", 1)[-1])
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
            return self._fstring(node, scope, depth, loc)
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
        if isinstance(node, cst.IfExp):  # `"steps" if val_set_size > 0 else "no"`: the branch the test picks
            test = self.evaluate(node.test, scope, depth + 1)
            if test is None or not isinstance(test.value, bool | int | float | str | None):
                return None
            return self.evaluate(node.body if test.value else node.orelse, scope, depth + 1)
        if isinstance(node, cst.Comparison) and len(node.comparisons) == 1:
            return self._compare(node, scope, depth, loc)
        if isinstance(node, cst.BooleanOperation) and isinstance(node.operator, cst.Or):
            # `cfg.from_checkpoint or cfg.name_or_path`: the first operand known to be set, once
            # every operand before it is known to be empty (an unknown one leaves the whole unknown)
            for operand in (node.left, node.right):
                value = self.evaluate(operand, scope, depth + 1)
                if value is None:
                    return None
                if value.value not in (None, "", 0, False, [], {}):
                    return value
            return value
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

    def _compare(self, node: cst.Comparison, scope: Scope, depth: int, loc: Loc) -> Value | None:
        target = node.comparisons[0]
        left, right = self.evaluate(node.left, scope, depth + 1), self.evaluate(target.comparator, scope, depth + 1)
        if left is None or right is None:
            return None
        a, b, op = left.value, right.value, target.operator
        if isinstance(op, cst.Is | cst.IsNot) and not any(v is None or isinstance(v, bool) for v in (a, b)):
            return None  # identity of other values is not something the text decides
        try:
            if isinstance(op, cst.Equal | cst.Is):
                value = a == b if isinstance(op, cst.Equal) else a is b
            elif isinstance(op, cst.NotEqual | cst.IsNot):
                value = a != b if isinstance(op, cst.NotEqual) else a is not b
            elif _is_number(a) and _is_number(b) and isinstance(op, cst.LessThan | cst.GreaterThan | cst.LessThanEqual | cst.GreaterThanEqual):
                value = {cst.LessThan: a < b, cst.GreaterThan: a > b, cst.LessThanEqual: a <= b, cst.GreaterThanEqual: a >= b}[type(op)]
            else:
                return None
        except TypeError:
            return None
        return Value(value, loc, min(left.level, right.level))

    def _joined(self, parts: list[cst.BaseExpression], scope: Scope, depth: int, loc: Loc) -> Value | None:
        """`os.path.join(a, b)` / `a / b` of known texts; a first part that is where the script lies or runs
        (`PROJECT_ROOT = Path(__file__).parents[2]`) drops out: the path below it is what the script
        states (`ROOT / "data" / "train.jsonl"` is data/train.jsonl of the project)."""
        if self._machine_root(parts[0], scope, depth):
            parts = parts[1:]
        values = []
        for part in parts:
            value = self.evaluate(part, scope, depth + 1)
            if value is None or not isinstance(value.value, str):
                return None
            values.append(value)
        if not values or any(v.value == ".." or v.value.startswith("../") for v in values):
            return None  # the project root itself, or a folder above it: still the machine's
        if len(values) == 1:
            return values[0]  # `join(ROOT, args.model)`: the flag's value, where it is written
        return Value(posixpath.join(*(v.value for v in values)), loc, min(v.level for v in values))

    def _machine_root(self, node: cst.BaseExpression, scope: Scope, depth: int) -> bool:
        """Built from `__file__`, the working directory or the home folder: a path only the machine knows."""
        if depth > _MAX_DEPTH:
            return False
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Divide):
            return self._machine_root(node.left, scope, depth + 1)
        for inner in iter_nodes(node):
            if isinstance(inner, cst.Name) and inner.value == "__file__":
                return True
            if isinstance(inner, cst.Call) and (dotted_name(inner.func) or "").rsplit(".", 1)[-1] in _ROOT_CALLS:
                return True
        if isinstance(node, cst.Name):
            found = self.definition(node.value, scope, self.line(node))
            if found is not None and found[0] == "assign":
                bound = unpacked(found[1], node.value)
                return bound is not None and self._machine_root(bound, found[1].scope, depth + 1)
            return False
        return any(self._machine_root(inner, scope, depth + 1) for inner in iter_nodes(node)
                   if isinstance(inner, cst.Name) and inner is not node and inner.value not in {"os", "path", "Path"})

    def _binary(self, node: cst.BinaryOperation, scope: Scope, depth: int, loc: Loc) -> Value | None:
        if isinstance(node.operator, cst.Divide) and self._machine_root(node.left, scope, depth):
            return self._joined(_path_parts(node), scope, depth, loc)
        left, right = self.evaluate(node.left, scope, depth + 1), self.evaluate(node.right, scope, depth + 1)
        if left is None or right is None:
            return None
        a, b, op = left.value, right.value, node.operator
        try:
            if _is_number(a) and _is_number(b):
                if type(op) not in _ARITHMETIC:
                    return None
                value = arithmetic.binary(_ARITHMETIC[type(op)], a, b)  # bounded: `10 ** 10 ** 10` is refused
            elif isinstance(op, cst.Add) and type(a) is type(b) and isinstance(a, str | list):
                value = a + b
                if len(value) > _MAX_CONCAT:  # `s = s + s` forty times is a gigabyte
                    return None
            else:
                return None
        except (ZeroDivisionError, OverflowError, ValueError):
            return None
        return Value(value, loc, min(left.level, right.level))

    def _call_value(self, node: cst.Call, scope: Scope, depth: int, loc: Loc) -> Value | None:
        args = [a for a in node.args if a.keyword is None and not a.star]
        if isinstance(node.func, cst.Attribute) and node.func.attr.value == "get" and 1 <= len(args) <= 2:
            # `train_conf.get("batch_size", 4)` on the config the script loads, also down a chain
            # (`config.get("sft", {}).get("output_file", "data.json")`): the config's value, else the default
            key = self.evaluate(args[0].value, scope, depth + 1)
            ns = self.namespace(node.func.value, scope, depth + 1) if key is not None else None
            if isinstance(ns, _ConfigNS) and ns.config is not None and isinstance(key.value, str):
                found = self._ns_value(ns, key.value, depth)
                if found is not None or len(args) == 1:
                    return found
                default = self.evaluate(args[1].value, scope, depth + 1)
                return None if default is None else Value(default.value, default.loc, Level.DEFAULT)
        name = dotted_name(node.func)
        if name is None:
            return None
        qual = self.qualify(name)
        # `os.path.expanduser("~/data")`: only the machine knows the home folder, so the path stays as written
        if qual in {"int", "float", "str", "bool", "Path", "pathlib.Path", "os.path.expanduser",
                    "os.path.expandvars"} and len(args) == 1:
            inner = self.evaluate(args[0].value, scope, depth + 1)
            if inner is None:
                return None
            try:
                cast = {"int": int, "float": float, "str": str, "bool": bool}.get(qual, str)  # a Path is its text
                return inner.with_value(cast(inner.value))
            except (TypeError, ValueError):
                return None
        if qual in {"os.environ.get", "os.getenv"} and len(args) >= 2:
            default = self.evaluate(args[1].value, scope, depth + 1)
            return None if default is None else Value(default.value, default.loc, Level.DEFAULT)
        if name in self.functions:  # `_env("GRPO_LR", 2e-5, float)`: a wrapper of os.environ.get, its default
            passed = self._env_default(self.functions[name], node, scope, depth)
            if passed is not None:
                return passed
        if qual in {"os.path.join", "posixpath.join"} and args and len(args) == len(node.args):
            return self._joined([a.value for a in args], scope, depth, loc)
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

    def _env_default(self, fn: FunctionInfo, call: cst.Call, scope: Scope, depth: int) -> Value | None:
        """For a call of a function of this file that returns `os.environ.get(key, default)` (cast or
        not): the argument the call passes as `default`, at the default level (the machine's
        environment may override it)."""
        if fn.name not in self._env_params:  # what the body reads, once per function
            first = next((n for n in iter_nodes(fn.node) if isinstance(n, cst.Call) and len(n.args) >= 2
                          and dotted_name(n.func) in {"os.environ.get", "os.getenv", "environ.get"}
                          and isinstance(n.args[1].value, cst.Name)), None)
            named = first.args[1].value.value if first is not None else None
            self._env_params[fn.name] = named if named in fn.params else None
        param = self._env_params[fn.name]
        if param is None:
            return None
        given = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == param), None)
        index = list(fn.params).index(param)
        positional = [a for a in call.args if a.keyword is None and not a.star]
        if given is None and index < len(positional):
            given = positional[index].value
        if given is None:
            return None
        value = self.evaluate(given, scope, depth + 1)
        return None if value is None else Value(value.value, value.loc, Level.DEFAULT)

    def switched_off(self, guards: tuple[tuple[cst.BaseExpression, bool], ...], scope: Scope) -> bool:
        """True when one of the `if` tests around a statement is known to skip it."""
        for test, holds in guards:
            value = self.evaluate(test, scope)
            if value is not None and isinstance(value.value, bool | int | float | str | type(None)) and bool(value.value) != holds:
                return True
        return False

    def _fstring(self, node: cst.FormattedString, scope: Scope, depth: int, loc: Loc) -> Value | None:
        """`f"{model_id}-codeforces-SFT"` with `model_id` bound to a literal: the text it makes, at its
        own line. A format spec or conversion (`{lr:.0e}`, `{x!r}`) is not evaluated."""
        text = []
        for part in node.parts:
            if isinstance(part, cst.FormattedStringText):
                text.append(part.value)
                continue
            if part.format_spec is not None or part.conversion is not None:
                return None
            inner = self.evaluate(part.expression, scope, depth + 1)
            if inner is None or isinstance(inner.value, bool) or not isinstance(inner.value, str | int | float):
                return None
            text.append(str(inner.value))
        return Value("".join(text), loc, Level.CODE)

    def _name_value(self, name: str, scope: Scope, use_line: int, depth: int) -> Value | None:
        found = self.definition(name, scope, use_line)
        if found is None:
            imported = self.imported_from(name)  # `from config import LR`: its value in config.py
            return imported[0]._name_value(imported[1], None, 10**9, depth + 1) if imported is not None else None
        kind, obj, def_scope = found
        if kind == "param":
            param: ParamDef = obj
            call = self._only_call(def_scope)
            if call is not None:  # `train(data, lr=lr)` from main(), the one place it runs: the caller's value
                node = call.kwarg_node(param.name) or _positional(call, list(self._function_of(def_scope).params),
                                                                   param.name)
                passed = self.evaluate(node, call.scope, depth + 1) if node is not None else None
                if passed is not None:
                    return passed  # else the default, as for any call we cannot follow
            if param.default is None:
                return None
            value = self.evaluate(option_default(param.default), def_scope, depth + 1)
            return None if value is None else Value(value.value, value.loc, Level.DEFAULT)
        assignment: Assignment = obj
        value = unpacked(assignment, name)
        return None if value is None else self.evaluate(value, assignment.scope, depth + 1)

    def definition(self, name: str, scope: Scope, use_line: int):
        """("assign", Assignment, scope) or ("param", ParamDef, scope) for a name used at `use_line`."""
        scopes: list[Scope] = []
        while scope is not None and all(scope is not s for s in scopes):  # the function, those around it, the module
            scopes.append(scope)
            scope = self.index.enclosing.get(id(scope))
        scopes.append(None)
        scope = scopes[0]
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
            # an assignment in an `if` branch the inputs switch off (`if ddp:` on one process) never ran
            before = [a for a in candidates if a.line <= use_line and not (a.guards and self.switched_off(a.guards, a.scope))]
            # `if not os.path.exists(path): path = "fallback.jsonl"`: the machine decides; the value
            # the script states first is the one it asks for
            stated = [a for a in before if not on_the_filesystem(a.guards)]
            before = stated or before
            chosen = before[-1] if (before and s is scope) else candidates[-1]
            return ("assign", chosen, s)
        return None

    def _is_hydra_main(self, node: Scope) -> bool:
        fn = self._function_of(node) if node is not None else None
        return fn is not None and any(self.qualify(d) == "hydra.main" for d in fn.decorators)

    def _only_call(self, scope: Scope) -> "CallSite | None":
        """The one call of a module-level function `scope` in this file, made from outside it, when
        there is exactly one and it passes no `*args` / `**kwargs` we cannot see into."""
        fn = self._function_of(scope) if scope is not None else None
        if fn is None or "@" in fn.name or self.index.enclosing.get(id(scope)) is not None \
                or next(iter(fn.params), "") in {"self", "cls"}:
            return None
        calls = [c for c in self.calls if c.qualname == fn.name]
        if len(calls) > 1:  # `generate_rollouts(...)` for training, and again in evaluate(): the training's
            calls = [c for c in calls if not c.in_evaluation()]
        if len(calls) != 1 or calls[0].scope is scope:
            return None
        if any(a.star == "*" or (a.star == "**" and not isinstance(a.value, cst.Name)) for a in calls[0].node.args):
            return None
        return calls[0]

    def function_of(self, node: cst.FunctionDef) -> FunctionInfo | None:
        """The function whose body `node` (a call's scope) is, when it is one."""
        return self._function_of(node)

    def _function_of(self, node: cst.FunctionDef) -> FunctionInfo | None:
        for fn in self.functions.values():
            if fn.node is node:
                return fn
        return None

    # -- attribute / subscript access --

    def _member(self, node: cst.Attribute | cst.Subscript, scope: Scope, depth: int) -> Value | None:
        if isinstance(node, cst.Attribute):
            base, key = node.value, node.attr.value
            if isinstance(base, cst.Name) and base.value not in {"self", "cls"}:
                # `lora_args.target_model = find_all_linear_names(model)` before the use: what was set
                # there, not the field's default (unknown when the code computes it)
                use = self.line(node)
                writes = [a for a in self.index.attribute_assigns.get(base.value, [])
                          if a.targets == (key,) and a.scope is scope and not a.guards and a.line < use]
                if writes:
                    return self.evaluate(writes[-1].value, scope, depth + 1)
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
                entry = self._dict_entry(base, key, scope, depth + 1)
                if entry is not None:  # `config["lr"]` of a dict written out: the entry, at its own line
                    return entry
                container = self.evaluate(base, scope, depth + 1)
                if container is not None and isinstance(container.value, dict | list):
                    try:
                        return container.with_value(container.value[key])
                    except (KeyError, IndexError, TypeError):
                        return None
            return self._config_by_path(node) if isinstance(node, cst.Attribute) else None
        return self._ns_value(ns, str(key), depth)

    def _config_by_path(self, node: cst.Attribute) -> Value | None:
        """`self.cfg.train.batch_size` in a trainer class handed the run's config: the one config key
        its last parts spell (`train.batch_size`), when a part before them names a config (`cfg`)."""
        parts = (dotted_name(node) or "").split(".")
        at = next((i for i, part in enumerate(parts) if part.lower() in _CONFIG_ROOTS), None)
        if at is None or len(parts) - at < 3 or not self.configs:  # `cfg.train.batch_size`: two parts below it
            return None
        key = ".".join(parts[at + 1:])
        found = [c.get(key) for c in self.configs if key in c]
        return found[0] if len(found) == 1 else None

    def _dict_entry(self, node: cst.BaseExpression, key: str | int, scope: Scope, depth: int) -> Value | None:
        """The value of entry `key` of the dict literal `node` holds (through names and a function's
        one caller)."""
        if depth > _MAX_DEPTH:
            return None
        if isinstance(node, cst.Dict):
            for element in node.elements:
                if isinstance(element, cst.DictElement) and literal_value(element.key) == key:
                    return self.evaluate(element.value, scope, depth + 1)
            return None
        if not isinstance(node, cst.Name):
            return None
        found = self.definition(node.value, scope, self.line(node))
        if found is None:
            return None
        kind, obj, def_scope = found
        if kind == "assign":
            bound = unpacked(obj, node.value)
            return None if bound is None else self._dict_entry(bound, key, obj.scope, depth + 1)
        call = self._only_call(def_scope)
        fn = self._function_of(def_scope) if call is not None else None
        passed = (call.kwarg_node(obj.name) or _positional(call, list(fn.params), obj.name)) if call is not None else None
        return None if passed is None else self._dict_entry(passed, key, call.scope, depth + 1)

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
            if kind == "param" and self.hydra is not None and (
                self._is_hydra_main(def_scope)
                # `def main(config: DictConfig)` called by the `@hydra.main` function with its config
                or (obj.annotation or "").rsplit(".", 1)[-1] == "DictConfig"
            ):
                return _ConfigNS(self.hydra, "")
            if kind == "param":
                if obj.annotation and obj.annotation.split("[", 1)[0].rsplit(".", 1)[-1] not in _PLAIN_TYPES:
                    if obj.annotation.rsplit(".", 1)[-1] == "Namespace" and self.argparse:
                        return _ArgparseNS()  # `def train(args: argparse.Namespace)`
                    return _DataclassNS(obj.annotation.rsplit(".", 1)[-1], parsed=True)
                if node.value in _ARGS_PARAMS and self.argparse and obj.default is None:
                    return _ArgparseNS()  # `def main(args)`: the file's one parsed command line, handed down
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
        if short == "get" and isinstance(node.func, cst.Attribute) and node.args:
            # `conf = config.get("sft_training", config.get("training", {}))`: the section, else the default's
            owner = self.namespace(node.func.value, scope, depth + 1)
            key = self.evaluate(node.args[0].value, scope, depth + 1)
            if isinstance(owner, _ConfigNS) and owner.config is not None and key is not None:
                section = f"{owner.prefix}{key.value}"
                if owner.config.under(section):
                    return _ConfigNS(owner.config, section + ".")
                if len(node.args) > 1:
                    return self.namespace(node.args[1].value, scope, depth + 1)
            return None
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
        """The dataclasses behind `parser.parse_args_into_dataclasses()` (or `parser.parse()`)."""
        if not isinstance(func, cst.Attribute):
            return []
        owner = func.value
        call: cst.BaseExpression | None = owner
        if isinstance(owner, cst.Name):
            found = self.definition(owner.value, scope, self.line(owner))
            call = found[1].value if found and found[0] == "assign" else None
            scope = found[2] if found else scope
        if not isinstance(call, cst.Call):
            return []
        if not self._is_parser_factory((dotted_name(call.func) or "").rsplit(".", 1)[-1]):
            return []
        node = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "dataclass_types"),
                    None) or (call.args[0].value if call.args and call.args[0].keyword is None else None)
        return self._class_names(node, scope)

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
            if ns.config is self.hydra and ns.prefix + key in self.cli:  # `loss.beta=0.1` on the command line
                return self.cli[ns.prefix + key]
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
            return self.filled_default(dest)
        value = self.evaluate(arg.default, None)
        if value is not None and value.value is None:  # `default=None`, then filled in after parsing
            return self.filled_default(dest) or value
        if value is None:
            return None
        if arg.type_name in {"int", "float"} and isinstance(value.value, str):
            try:
                value = value.with_value({"int": int, "float": float}[arg.type_name](value.value))
            except ValueError:
                return None
        return Value(value.value, value.loc, Level.DEFAULT)

    def filled_default(self, dest: str) -> Value | None:
        """The value a script gives an option left None on its command line (`if args.x is None: args.x = ...`)."""
        filled = self.index.filled_defaults.get(dest)
        if filled is None:
            return None
        value = self.evaluate(filled.value, filled.scope)
        return None if value is None else Value(value.value, value.loc, Level.DEFAULT)

    def field_value(self, class_name: str, key: str, *, parsed: bool) -> Value | None:
        """A dataclass field: the command line, then a config file when the class is parsed from
        them, then the default the class declares (following base classes defined here)."""
        if parsed:
            if key in self.cli:
                return self.cli[key]
            for config in self.configs:
                if key in config:
                    return config.get(key)
        # built once, `TrainConfig(lr=args.lr)`: what it is given, here or by the script that imports the class
        for src in (self, *self.importers):
            built = src.calls_named(class_name)
            if len(built) == 1 and key in built[0].keywords():
                given = built[0].kwarg(key)
                if given is not None:
                    return given
            if built:
                break
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
        if isinstance(node, cst.Call) and (dotted_name(node.func) or "").rsplit(".", 1)[-1] in {"field", "Field"}:
            default = field_default(node)
            if default is not node:
                return self.evaluate(default, None)
            for arg in node.args:
                if arg.keyword is not None and arg.keyword.value in {"default_factory", "default_factory_fn"}:
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



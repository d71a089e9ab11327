"""Every SDK name the docs and scaffolds use exists in the installed SDK, with the keywords used.

What is scanned:
- SKILL.md, mint_api_cheatsheet.md, commands/*.md: every ```python (or ```py) fenced block, and every
  inline `code` span that parses as Python;
- the concept maps (mint_migrate/concepts/*.yaml): each concept's `after` snippet, and the inline
  `code` spans of its `mint`, `explanation` and `pitfalls` texts (`before` is the source framework's
  code and is never checked);
- the scaffolds (scaffolds/**/*.j2): each template with its jinja tags stripped (or rendered, when
  stripping does not leave valid Python).

Convention for deliberate counter-examples (documented in the cheatsheet's "Conventions"):
- a fenced block whose info string contains `wrong` (```` ```python wrong ````), or whose first
  line is a `# wrong` comment, is skipped;
- an inline span inside strikethrough, ~~`result.loss`~~, is skipped.

The checker is a small static type tracker over `ast`: it knows the receivers people write
(training_client/tc, sampling_client/sampler, service_client, rest_client, types, mint, mint.mint,
`import mint as tinker`), follows assignments and the SDK's own return annotations
(create_lora_training_client -> TrainingClient, forward_backward -> APIFuture[ForwardBackwardOutput],
.result() / await -> ForwardBackwardOutput, ...), and reports: attributes that do not exist,
calls whose keywords or arity do not bind to the real signature, string literals outside a
Literal parameter's values (loss_fn="grpo"), awaiting what is not awaitable and using a coroutine
without awaiting it.
"""

from __future__ import annotations

import ast
import builtins
import concurrent.futures
import dataclasses
import inspect
import re
import sys
import textwrap
import types as pytypes
import typing
from dataclasses import dataclass, field
from pathlib import Path

import mint
import mint.mint
import pytest
import tinker
import yaml
from tinker._client import AsyncTinker
from tinker.lib.public_interfaces.api_future import AwaitableConcurrentFuture
from tinker.lib.public_interfaces.rest_client import RestClient

ROOT = Path(__file__).resolve().parent.parent
MARKDOWN_DOCS = ["SKILL.md", "mint_api_cheatsheet.md", "commands/migrate.md"]
CONCEPTS_DIR = ROOT / "mint_migrate" / "concepts"
SCAFFOLDS_DIR = ROOT / "scaffolds"

# ----------------------------------------------------------------------------------------------
# Static types the checker tracks
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Ty:
    """What an expression is: an instance of a class, a class, a module, a callable, a coroutine."""

    kind: str  # instance | class | module | function | method | coroutine
    obj: object
    args: tuple = ()  # generic arguments (Ty or None): APIFuture[X], list[X], dict[K, V], coroutine -> X
    owner: type | None = None  # the class a method was looked up on

    def label(self) -> str:
        name = getattr(self.obj, "__qualname__", None) or getattr(self.obj, "__name__", None) or repr(self.obj)
        if self.kind == "coroutine":
            return "a coroutine (missing await)"
        return {"instance": f"{name} instance", "class": f"class {name}", "module": f"module {name}"}.get(
            self.kind, name
        )


NONE = None  # an unknown type: nothing is checked on it

SDK_CLASSES: dict[str, type] = {}
for _ns in (mint, mint.types, mint.mint):
    for _name in dir(_ns):
        _obj = getattr(_ns, _name)
        if inspect.isclass(_obj) and (_obj.__module__.split(".")[0] in ("tinker", "mint")):
            SDK_CLASSES.setdefault(_name, _obj)
SDK_CLASSES["RestClient"] = RestClient

# Receiver names people (and our docs) use, when a snippet does not show where they came from.
CONVENTIONAL: dict[str, Ty] = {
    "mint": Ty("module", mint),
    "tinker": Ty("module", mint),  # the migration bridge: import mint as tinker
    "types": Ty("module", mint.types),
    "mintx": Ty("module", mint.mint),
    "training_client": Ty("instance", mint.TrainingClient),
    "tc": Ty("instance", mint.TrainingClient),
    "policy_client": Ty("instance", mint.TrainingClient),
    "student_client": Ty("instance", mint.TrainingClient),
    "sampling_client": Ty("instance", mint.SamplingClient),
    "sampler": Ty("instance", mint.SamplingClient),
    "reference_client": Ty("instance", mint.SamplingClient),
    "ref_sampler": Ty("instance", mint.SamplingClient),
    "teacher_sampler": Ty("instance", mint.SamplingClient),
    "service_client": Ty("instance", mint.ServiceClient),
    "rest_client": Ty("instance", RestClient),
}

# ServiceClient(**kwargs) forwards its extra keywords to the HTTP client; these are what it takes.
FORWARDED_KWARGS = {
    mint.ServiceClient: {
        n for n in inspect.signature(AsyncTinker.__init__).parameters if not n.startswith("_") and n != "self"
    }
}

FUTURES = (tinker.APIFuture, concurrent.futures.Future)


def _runtime_future(fn: object, depth: int = 0) -> type | None:
    """The class of the future a call really returns, where the annotation says only APIFuture.

    In tinker 0.22.0 a training call ends in `return self.holder.run_coroutine_threadsafe(...)`,
    which returns an AwaitableConcurrentFuture (it has `.future()`, the concurrent Future
    underneath); its `_async` twin ends in `return self.<call>(...)`. Read from the SDK's source,
    so a call that returns something else (forward_backward_custom: `.result()` of one) keeps the
    annotation's APIFuture.
    """
    fn = inspect.unwrap(getattr(fn, "__func__", fn))
    owner = _module_of(fn).get(getattr(fn, "__qualname__", "").split(".")[0])
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return None
    last = tree.body[0].body[-1] if tree.body and hasattr(tree.body[0], "body") else None
    if not (isinstance(last, ast.Return) and isinstance(last.value, ast.Call)):
        return None
    func = last.value.func
    if ast.unparse(func) == "self.holder.run_coroutine_threadsafe":
        return AwaitableConcurrentFuture
    if (
        depth == 0
        and inspect.isclass(owner)
        and isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Name)
        and func.value.id == "self"
    ):
        return _runtime_future(getattr(owner, func.attr, None), depth + 1)
    return None


def _is_checked_class(cls: object) -> bool:
    """Classes whose attribute surface we enforce: the SDK's own and the futures it returns."""
    if not inspect.isclass(cls):
        return False
    return cls.__module__.split(".")[0] in ("tinker", "mint") or cls in FUTURES


def _module_of(obj: object) -> dict:
    fn = inspect.unwrap(getattr(obj, "__func__", obj))  # type: ignore[arg-type]
    if hasattr(fn, "__globals__"):
        return fn.__globals__
    module = sys.modules.get(getattr(obj, "__module__", "") or "")
    return vars(module) if module else {}


# ----------------------------------------------------------------------------------------------
# Annotations -> Ty
# ----------------------------------------------------------------------------------------------

_LIST_NAMES = {"list", "List", "Sequence", "tuple", "Tuple", "Iterable", "Iterator"}
_DICT_NAMES = {"dict", "Dict", "Mapping"}


def ty_from_annotation(ann: object, globalns: dict) -> Ty | None:
    if ann is None or ann is inspect.Parameter.empty:
        return NONE
    if isinstance(ann, str):
        try:
            node = ast.parse(ann, mode="eval").body
        except SyntaxError:
            return NONE
        return _ty_from_ann_node(node, globalns)
    origin = typing.get_origin(ann)
    if origin is typing.Union or origin is pytypes.UnionType:
        members = [a for a in typing.get_args(ann) if a is not type(None)]
        return ty_from_annotation(members[0], globalns) if len(members) == 1 else NONE
    if origin is typing.Annotated:
        return ty_from_annotation(typing.get_args(ann)[0], globalns)
    if origin is not None:
        args = tuple(ty_from_annotation(a, globalns) for a in typing.get_args(ann))
        name = getattr(origin, "__name__", "")
        if name in _LIST_NAMES or origin in (list, tuple):
            return Ty("instance", list, args[:1])
        if name in _DICT_NAMES or origin is dict:
            return Ty("instance", dict, args[1:2])
        if inspect.isclass(origin):
            return Ty("instance", origin, args)
        return NONE
    if inspect.isclass(ann):
        return Ty("instance", ann)
    return NONE


def _lookup(name: str, globalns: dict) -> object:
    if name in globalns:
        return globalns[name]
    if name in SDK_CLASSES:  # names imported only under TYPE_CHECKING
        return SDK_CLASSES[name]
    return getattr(builtins, name, None)


def _ann_object(node: ast.expr, globalns: dict) -> object:
    if isinstance(node, ast.Name):
        return _lookup(node.id, globalns)
    if isinstance(node, ast.Attribute):
        base = _ann_object(node.value, globalns)
        return getattr(base, node.attr, None) if base is not None else SDK_CLASSES.get(node.attr)
    return None


def _ty_from_ann_node(node: ast.expr, globalns: dict) -> Ty | None:
    if isinstance(node, ast.Constant):
        return NONE
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        parts = [p for p in (node.left, node.right) if not (isinstance(p, ast.Constant) and p.value is None)]
        return _ty_from_ann_node(parts[0], globalns) if len(parts) == 1 else NONE
    if isinstance(node, ast.Subscript):
        base = node.value
        name = base.attr if isinstance(base, ast.Attribute) else base.id if isinstance(base, ast.Name) else ""
        elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if name == "Optional":
            return _ty_from_ann_node(elts[0], globalns)
        if name == "Union":
            members = [e for e in elts if not (isinstance(e, ast.Constant) and e.value is None)]
            return _ty_from_ann_node(members[0], globalns) if len(members) == 1 else NONE
        args = tuple(_ty_from_ann_node(e, globalns) for e in elts)
        if name in _LIST_NAMES:
            return Ty("instance", list, args[:1])
        if name in _DICT_NAMES:
            return Ty("instance", dict, args[1:2])
        origin = _ann_object(base, globalns)
        if inspect.isclass(origin):
            return Ty("instance", origin, args)
        return NONE
    obj = _ann_object(node, globalns)
    if inspect.isclass(obj):
        return Ty("instance", obj)
    if obj is not None and typing.get_origin(obj) is not None:
        return ty_from_annotation(obj, globalns)
    return NONE


def literal_values(ann: object, globalns: dict) -> tuple | None:
    """The allowed values when an annotation is (an Optional of) a Literal, else None."""
    if isinstance(ann, str):
        try:
            node = ast.parse(ann, mode="eval").body
        except SyntaxError:
            return None
        if isinstance(node, ast.BinOp):
            for part in (node.left, node.right):
                vals = literal_values(ast.unparse(part), globalns)
                if vals:
                    return vals
            return None
        if isinstance(node, ast.Subscript) and getattr(node.value, "id", getattr(node.value, "attr", "")) == "Literal":
            elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            return tuple(e.value for e in elts if isinstance(e, ast.Constant))
        if isinstance(node, ast.Subscript) and getattr(node.value, "id", "") == "Optional":
            return literal_values(ast.unparse(node.slice), globalns)
        obj = _ann_object(node, globalns)
        return literal_values(obj, globalns) if obj is not None else None
    origin = typing.get_origin(ann)
    if origin is typing.Literal:
        return typing.get_args(ann)
    if origin is typing.Union or origin is pytypes.UnionType:
        for a in typing.get_args(ann):
            vals = literal_values(a, globalns)
            if vals:
                return vals
    return None


# ----------------------------------------------------------------------------------------------
# Attribute surface of SDK classes
# ----------------------------------------------------------------------------------------------


def _instance_attributes(cls: type) -> set[str]:
    names: set[str] = set()
    for klass in cls.__mro__:
        init = vars(klass).get("__init__")
        if init is None or not _is_checked_class(klass):
            continue
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(init)))
        except (OSError, TypeError, SyntaxError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
                if isinstance(node.ctx, ast.Store):
                    names.add(node.attr)
    return names


def attribute_ty(cls: type, name: str) -> tuple[bool, Ty | None]:
    """(exists, type) of `instance.name` for an SDK class."""
    if hasattr(cls, "model_fields") and name in cls.model_fields:
        return True, ty_from_annotation(cls.model_fields[name].annotation, _module_of(cls))
    if dataclasses.is_dataclass(cls):
        for f in dataclasses.fields(cls):
            if f.name == name:
                return True, ty_from_annotation(f.type, vars(sys.modules[cls.__module__]))
    raw = inspect.getattr_static(cls, name, None)
    if raw is None:
        return name in _instance_attributes(cls), NONE
    if isinstance(raw, property):
        return True, ty_from_annotation(inspect.signature(raw.fget).return_annotation, _module_of(raw.fget))
    if type(raw).__name__ == "cached_property":
        return True, ty_from_annotation(inspect.signature(raw.func).return_annotation, _module_of(raw.func))
    if isinstance(raw, (staticmethod, classmethod)):
        return True, Ty("function", getattr(cls, name))
    if callable(raw):
        return True, Ty("method", raw, owner=cls)
    return True, NONE


# ----------------------------------------------------------------------------------------------
# The checker
# ----------------------------------------------------------------------------------------------


@dataclass
class Checker:
    label: str
    partial: bool = False  # inline spans: missing arguments are fine, extra/unknown ones are not
    errors: list[str] = field(default_factory=list)
    calls_checked: int = 0
    env: dict[str, Ty | None] = field(default_factory=dict)

    def error(self, node: ast.AST, message: str) -> None:
        self.errors.append(f"{self.label}:{getattr(node, 'lineno', 0)}: {message}")

    # --- statements ----------------------------------------------------------------------------

    def run(self, tree: ast.AST) -> None:
        for stmt in getattr(tree, "body", []):
            self.stmt(stmt)

    def stmt(self, node: ast.stmt) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                self.bind_import(alias.asname or alias.name.split(".")[0], alias.name if alias.asname else alias.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom):
            module = self.import_module(node.module or "")
            for alias in node.names:
                name = alias.asname or alias.name
                if module is None:
                    self.env[name] = NONE
                elif not hasattr(module, alias.name):
                    self.error(node, f"'{node.module}' has no name '{alias.name}'")
                    self.env[name] = NONE
                else:
                    self.env[name] = self.ty_of_object(getattr(module, alias.name))
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            value_ty = self.expr(node.value) if node.value is not None else NONE
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if isinstance(node, ast.AnnAssign):
                ann_ty = self.annotation_ty(node.annotation)
                value_ty = ann_ty or value_ty
            for target in targets:
                self.assign(target, value_ty if not isinstance(node, ast.AugAssign) else NONE)
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            iter_ty = self.expr(node.iter)
            self.assign(node.target, self.element_ty(iter_ty))
            self.block(node.body + node.orelse)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for d in node.decorator_list:
                self.expr(d)
            saved = dict(self.env)
            args = node.args
            for a in args.posonlyargs + args.args + args.kwonlyargs:
                self.env[a.arg] = self.annotation_ty(a.annotation) if a.annotation else self.env.get(a.arg, NONE)
                if a.annotation is None:
                    self.env.pop(a.arg, None)  # unannotated: fall back to the conventional names
            self.block(node.body)
            learned = {k: v for k, v in self.env.items() if k.startswith("self.") and v is not None}
            self.env = saved | learned
            self.env[node.name] = NONE
        elif isinstance(node, ast.ClassDef):
            self.block(node.body)
            self.env[node.name] = NONE
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                ty = self.expr(item.context_expr)
                if item.optional_vars is not None:
                    self.assign(item.optional_vars, NONE if ty is None else NONE)
            self.block(node.body)
        elif isinstance(node, (ast.If, ast.While)):
            self.expr(node.test)
            self.block(node.body + node.orelse)
        elif isinstance(node, ast.Try):
            self.block(node.body)
            for h in node.handlers:
                if h.type is not None:
                    self.expr(h.type)
                if h.name:
                    self.env[h.name] = NONE
                self.block(h.body)
            self.block(node.orelse + node.finalbody)
        elif isinstance(node, ast.Return) and node.value is not None or isinstance(node, ast.Expr):
            self.expr(node.value)
        else:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.expr):
                    self.expr(child)
                elif isinstance(child, ast.stmt):
                    self.stmt(child)

    def block(self, stmts: list[ast.stmt]) -> None:
        for s in stmts:
            self.stmt(s)

    def assign(self, target: ast.expr, ty: Ty | None) -> None:
        if isinstance(target, ast.Name):
            self.env[target.id] = ty
        elif _self_attribute(target):
            # `self.sampler: mint.SamplingClient | None = None` types later `self.sampler.sample(...)`
            key = f"self.{target.attr}"  # type: ignore[attr-defined]
            if ty is not None or key not in self.env:
                self.env[key] = ty
        elif isinstance(target, (ast.Tuple, ast.List)):
            for elt in target.elts:
                self.assign(elt.value if isinstance(elt, ast.Starred) else elt, NONE)
        else:
            self.expr(target)

    def import_module(self, dotted: str) -> object:
        if dotted in ("mint", "tinker"):
            return mint if dotted == "mint" else tinker
        if dotted in ("mint.mint", "mint.types", "tinker.types", "mint.tinker"):
            head, tail = dotted.split(".")
            return getattr(mint if head == "mint" else tinker, tail)
        return None

    def bind_import(self, name: str, dotted: str) -> None:
        module = self.import_module(dotted)
        self.env[name] = Ty("module", module) if module is not None else NONE

    def ty_of_object(self, obj: object) -> Ty | None:
        if isinstance(obj, pytypes.ModuleType):
            return Ty("module", obj)
        if inspect.isclass(obj):
            return Ty("class", obj)
        if callable(obj):
            return Ty("function", obj)
        return NONE

    def annotation_ty(self, node: ast.expr | None) -> Ty | None:
        """`mint.TrainingClient`, `X | None`, `Optional[X]` and "X" (a string) -> an instance of X."""
        if node is None:
            return NONE
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            try:
                return self.annotation_ty(ast.parse(node.value, mode="eval").body)
            except SyntaxError:
                return NONE
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            sides = [n for n in (node.left, node.right) if not (isinstance(n, ast.Constant) and n.value is None)]
            return self.annotation_ty(sides[0]) if len(sides) == 1 else NONE
        if isinstance(node, ast.Subscript) and getattr(node.value, "id", getattr(node.value, "attr", "")) == "Optional":
            return self.annotation_ty(node.slice)
        ty = self.expr(node)
        if ty is not None and ty.kind == "class":
            return Ty("instance", ty.obj)
        return NONE

    # --- expressions ---------------------------------------------------------------------------

    def expr(self, node: ast.expr | None) -> Ty | None:
        if node is None:
            return NONE
        method = getattr(self, f"expr_{type(node).__name__}", None)
        if method is not None:
            return method(node)
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                self.expr(child)
            elif isinstance(child, ast.comprehension):
                self.comprehension(child)
        return NONE

    def comprehension(self, comp: ast.comprehension) -> None:
        self.assign(comp.target, self.element_ty(self.expr(comp.iter)))
        for cond in comp.ifs:
            self.expr(cond)

    def _comp(self, node: ast.expr, elts: list[ast.expr]) -> Ty | None:
        saved = dict(self.env)
        for gen in node.generators:  # type: ignore[attr-defined]
            self.comprehension(gen)
        result = [self.expr(e) for e in elts]
        self.env = saved
        if isinstance(node, (ast.ListComp, ast.GeneratorExp)):
            return Ty("instance", list, (result[0],))
        return NONE

    def expr_ListComp(self, node: ast.ListComp) -> Ty | None:
        return self._comp(node, [node.elt])

    def expr_GeneratorExp(self, node: ast.GeneratorExp) -> Ty | None:
        return self._comp(node, [node.elt])

    def expr_SetComp(self, node: ast.SetComp) -> Ty | None:
        return self._comp(node, [node.elt])

    def expr_DictComp(self, node: ast.DictComp) -> Ty | None:
        return self._comp(node, [node.key, node.value])

    def expr_Lambda(self, node: ast.Lambda) -> Ty | None:
        saved = dict(self.env)
        for a in node.args.args:
            self.env[a.arg] = NONE
        self.expr(node.body)
        self.env = saved
        return NONE

    def expr_Name(self, node: ast.Name) -> Ty | None:
        if node.id in self.env and self.env[node.id] is not None:
            return self.env[node.id]
        if node.id in self.env and node.id not in CONVENTIONAL:
            return NONE
        return CONVENTIONAL.get(node.id, NONE)

    def expr_List(self, node: ast.List) -> Ty | None:
        elts = [self.expr(e) for e in node.elts]
        return Ty("instance", list, (elts[0] if elts else NONE,))

    def expr_Subscript(self, node: ast.Subscript) -> Ty | None:
        base = self.expr(node.value)
        self.expr(node.slice)
        if base is not None and base.kind == "instance" and base.obj in (list, dict) and base.args:
            return base.args[0] if not isinstance(node.slice, ast.Slice) or base.obj is dict else base
        return NONE

    def element_ty(self, ty: Ty | None) -> Ty | None:
        if ty is not None and ty.kind == "instance" and ty.obj is list and ty.args:
            return ty.args[0]
        return NONE

    def expr_Await(self, node: ast.Await) -> Ty | None:
        ty = self.expr(node.value)
        if ty is None:
            return NONE
        if ty.kind == "coroutine":
            return ty.args[0] if ty.args else NONE
        if ty.kind == "instance" and inspect.isclass(ty.obj):
            if issubclass(ty.obj, tinker.APIFuture):
                return ty.args[0] if ty.args else NONE
            if issubclass(ty.obj, concurrent.futures.Future):
                self.error(
                    node,
                    "a concurrent.futures.Future is not awaitable (SamplingClient.sample/compute_logprobs, "
                    "RestClient calls): use the *_async method, .result(), or asyncio.wrap_future",
                )
                return NONE
            if _is_checked_class(ty.obj) and not hasattr(ty.obj, "__await__"):
                self.error(node, f"{ty.label()} is not awaitable (0.38-style await on a 0.22 call?)")
        return NONE

    def expr_Attribute(self, node: ast.Attribute) -> Ty | None:
        if _self_attribute(node):
            return self.env.get(f"self.{node.attr}", NONE)
        base = self.expr(node.value)
        if base is None:
            return NONE
        name = node.attr
        if base.kind == "coroutine":
            self.error(node, f".{name} on a coroutine: the *_async call needs an await first")
            return NONE
        if base.kind == "module":
            module = base.obj
            if not hasattr(module, name):
                self.error(node, f"{module.__name__} has no attribute '{name}' in the installed SDK")
                return NONE
            return self.ty_of_object(getattr(module, name))
        if base.kind == "class" and _is_checked_class(base.obj):
            cls = base.obj
            if not hasattr(cls, name) and not (hasattr(cls, "model_fields") and name in cls.model_fields):
                self.error(node, f"{cls.__name__} has no attribute '{name}'")
                return NONE
            return self.ty_of_object(getattr(cls, name, None))
        if base.kind == "instance" and _is_checked_class(base.obj):
            cls = base.obj
            exists, ty = attribute_ty(cls, name)
            if not exists:
                self.error(node, f"{cls.__name__} has no attribute '{name}'")
                return NONE
            if ty is not None and ty.kind == "method":
                return Ty("method", ty.obj, base.args, owner=cls)
            return ty
        return NONE

    def expr_Call(self, node: ast.Call) -> Ty | None:
        func_ty = self.expr(node.func)
        for a in node.args:
            self.expr(a.value if isinstance(a, ast.Starred) else a)
        for k in node.keywords:
            self.expr(k.value)
        if func_ty is None:
            return NONE
        if func_ty.kind == "class":
            cls = func_ty.obj
            if _is_checked_class(cls):
                self.check_binding(node, cls, f"{cls.__name__}(...)", drop_first=False, forwarded=FORWARDED_KWARGS.get(cls))
            return Ty("instance", cls)
        if func_ty.kind == "method" and func_ty.owner is not None:
            fn = func_ty.obj
            name = getattr(fn, "__name__", "?")
            if issubclass(func_ty.owner, FUTURES) and name in ("result", "result_async"):
                inner = func_ty.args[0] if func_ty.args else NONE
                if name == "result_async":
                    return Ty("coroutine", None, (inner,))
                return inner
            if issubclass(func_ty.owner, AwaitableConcurrentFuture) and name == "future":
                self.check_binding(node, fn, f"{func_ty.owner.__name__}.future(...)", drop_first=True)
                return Ty("instance", concurrent.futures.Future, func_ty.args)
            self.check_binding(node, fn, f"{func_ty.owner.__name__}.{name}(...)", drop_first=True)
            return self.return_ty(fn)
        if func_ty.kind == "function":
            fn = func_ty.obj
            if _is_checked_class(getattr(fn, "__self__", None)) or (getattr(fn, "__module__", "") or "").split(".")[0] in ("tinker", "mint"):
                self.check_binding(node, fn, f"{getattr(fn, '__qualname__', fn)}(...)", drop_first=False)
                return self.return_ty(fn)
        return NONE

    def return_ty(self, fn: object) -> Ty | None:
        try:
            ret = inspect.signature(fn).return_annotation
        except (TypeError, ValueError):
            return NONE
        ty = ty_from_annotation(ret, _module_of(fn))
        if ty is not None and ty.kind == "instance" and ty.obj is tinker.APIFuture:
            real = _runtime_future(fn)
            if real is not None:
                ty = Ty("instance", real, ty.args)
        if inspect.iscoroutinefunction(inspect.unwrap(getattr(fn, "__func__", fn))):
            return Ty("coroutine", None, (ty,))
        return ty

    def check_binding(
        self, node: ast.Call, fn: object, what: str, *, drop_first: bool, forwarded: set[str] | None = None
    ) -> None:
        self.calls_checked += 1
        try:
            sig = inspect.signature(fn)
        except (TypeError, ValueError):
            return
        params = list(sig.parameters.values())
        if drop_first and params:
            params = params[1:]
        sig = sig.replace(parameters=params)
        has_var_kw = any(p.kind is p.VAR_KEYWORD for p in params)
        starred = any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords)
        kw_names = [k.arg for k in node.keywords if k.arg is not None]
        if forwarded is not None:
            extra = [k for k in kw_names if k not in sig.parameters and k not in forwarded]
            if extra:
                accepted = sorted({p.name for p in params if p.kind is not p.VAR_KEYWORD} | forwarded)
                self.error(node, f"{what}: unknown keyword(s) {extra}; accepted: {accepted}")
            kw_names = [k for k in kw_names if k in sig.parameters]
            params = [p for p in params if p.kind is not p.VAR_KEYWORD]
            sig = sig.replace(parameters=params)
            has_var_kw = False
        if not has_var_kw:
            unknown = [k for k in kw_names if k not in sig.parameters or sig.parameters[k].kind is inspect.Parameter.POSITIONAL_ONLY]
            if unknown:
                self.error(node, f"{what}: no parameter named {unknown}; it takes {list(sig.parameters)}")
                return
        if starred:
            return
        if [getattr(a, "value", None) for a in node.args] == [Ellipsis] and not node.keywords:
            return  # `f(...)`: arguments deliberately elided
        elided = any(isinstance(a, ast.Constant) and a.value is Ellipsis for a in node.args)
        placeholders = [object()] * len(node.args)
        try:
            if self.partial or elided:
                bound = sig.bind_partial(*placeholders, **{k: object() for k in kw_names})
            else:
                bound = sig.bind(*placeholders, **{k: object() for k in kw_names})
        except TypeError as exc:
            self.error(node, f"{what}: {exc}")
            return
        # String literals passed to Literal parameters must be among the allowed values.
        globalns = _module_of(fn)
        values = dict(zip([p.name for p in params], node.args, strict=False)) | {k.arg: k.value for k in node.keywords if k.arg}
        for name in bound.arguments:
            arg = values.get(name)
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                allowed = literal_values(sig.parameters[name].annotation, globalns)
                if allowed and arg.value not in allowed:
                    self.error(node, f"{what}: {name}={arg.value!r} is not one of {list(allowed)}")


def _self_attribute(node: ast.expr) -> bool:
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"


def check_source(source: str, label: str, *, partial: bool = False) -> Checker:
    """Parse `source` (top-level await allowed) and run the checker; a SyntaxError is an error."""
    checker = Checker(label, partial=partial)
    try:
        tree = compile(source, label, "exec", flags=ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    except SyntaxError as exc:
        checker.errors.append(f"{label}:{exc.lineno}: not valid Python: {exc.msg}")
        return checker
    checker.run(tree)
    return checker


# ----------------------------------------------------------------------------------------------
# Extraction: markdown, concept YAML, jinja templates
# ----------------------------------------------------------------------------------------------

FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>```+|~~~+)(?P<info>[^\n`]*)\n(?P<body>.*?)^(?P=indent)(?P=fence)[ \t]*$", re.S | re.M)
INLINE = re.compile(r"(?P<strike>~~)?(?<!`)`(?P<code>[^`\n]+)`(?!`)(?(strike)~~)")


def is_wrong_block(info: str, body: str) -> bool:
    first = next((line.strip() for line in body.splitlines() if line.strip()), "")
    return "wrong" in info.split() or re.match(r"#\s*wrong\b", first, re.I) is not None


def markdown_blocks(text: str, label: str) -> list[tuple[str, str]]:
    """(label, code) for each python fenced block not marked wrong."""
    blocks = []
    for m in FENCE.finditer(text):
        info = m.group("info").strip()
        lang = info.split()[0].lower() if info else ""
        if lang not in ("python", "py"):
            continue
        body = textwrap.dedent(m.group("body"))
        if is_wrong_block(info, body):
            continue
        line = text.count("\n", 0, m.start()) + 2
        blocks.append((f"{label}:block@{line}", body))
    return blocks


def inline_spans(text: str, label: str) -> list[tuple[str, str]]:
    """(label, code) for inline code spans outside fenced blocks and outside ~~strikethrough~~."""
    without_fences = FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    spans = []
    for m in INLINE.finditer(without_fences):
        if m.group("strike"):
            continue
        code = m.group("code").strip()
        line = without_fences.count("\n", 0, m.start()) + 1
        spans.append((f"{label}:{line}:`{code}`", code))
    return spans


def check_inline(label: str, code: str) -> list[str]:
    """Inline spans are checked only when they parse as Python and touch an SDK receiver."""
    try:
        compile(code, label, "exec", flags=ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    except SyntaxError:
        return []
    return check_source(code, label, partial=True).errors


JINJA_STMT_LINE = re.compile(r"^[ \t]*\{%-?.*?-?%\}[ \t]*\n", re.M)
JINJA_STMT = re.compile(r"\{%-?.*?-?%\}", re.S)
JINJA_COMMENT = re.compile(r"\{#.*?#\}", re.S)
JINJA_EXPR = re.compile(r"\{\{-?.*?-?\}\}", re.S)


def strip_jinja(template: str) -> str:
    """Template -> Python: drop comments and statement tags, replace {{ expr }} by a placeholder name.

    Both branches of an {% if %} stay, which is what we want (both are shipped code), as long as
    they are valid together; when they are not, the caller falls back to rendering.
    """
    text = JINJA_COMMENT.sub("", template)
    text = JINJA_STMT_LINE.sub("", text)
    text = JINJA_STMT.sub("", text)
    return JINJA_EXPR.sub("_jinja_value", text)


def render_jinja(path: Path, root: Path = SCAFFOLDS_DIR) -> str:
    """Render a template with every variable undefined-but-harmless (a number-like placeholder)."""
    import jinja2

    class Placeholder(jinja2.ChainableUndefined):
        def __str__(self) -> str:
            return "0"

        def __iter__(self):
            return iter(())

        def __bool__(self) -> bool:
            return False

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(root)), undefined=Placeholder, keep_trailing_newline=True
    )
    env.filters.setdefault("tojson", lambda v, *a, **k: '"0"' if isinstance(v, jinja2.Undefined) else repr(v))
    env.filters.setdefault("py", lambda v, *a, **k: "0" if isinstance(v, jinja2.Undefined) else repr(v))
    return env.get_template(path.relative_to(root).as_posix()).render()


def template_python(path: Path, root: Path = SCAFFOLDS_DIR) -> tuple[str, str]:
    """(how, python source) for a jinja template: stripped if that parses, else rendered, else dedented."""
    template = path.read_text(encoding="utf-8")
    candidates = [("stripped", strip_jinja(template))]
    try:
        candidates.append(("rendered", render_jinja(path, root)))
    except Exception as exc:  # noqa: BLE001 - a template that cannot render is reported below
        candidates.append(("render failed", f"raise SystemExit({str(exc)!r})"))
    candidates.append(("stripped+dedented", textwrap.dedent(strip_jinja(template))))
    for how, source in candidates:
        try:
            compile(source, str(path), "exec", flags=ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
            return how, source
        except SyntaxError:
            continue
    return "unparseable", candidates[0][1]


def scaffold_templates() -> list[Path]:
    return sorted(p for p in SCAFFOLDS_DIR.rglob("*.j2") if p.is_file())


def concept_files() -> list[Path]:
    return sorted(CONCEPTS_DIR.glob("*.yaml"))


# ----------------------------------------------------------------------------------------------
# Negative tests: the checker catches the classic mistakes on synthetic snippets
# ----------------------------------------------------------------------------------------------

BAD_SNIPPETS = {
    "stop_token_ids": (
        "import mint\nfrom mint import types\n"
        "params = types.SamplingParams(max_tokens=64, stop_token_ids=[2])\n",
        "stop_token_ids",
    ),
    "result.loss": (
        "import mint\n"
        "service_client = mint.ServiceClient()\n"
        "tc = service_client.create_lora_training_client(base_model='Qwen/Qwen3-0.6B', rank=8)\n"
        "result = tc.forward_backward(data, loss_fn='cross_entropy').result()\n"
        "print(result.loss)\n",
        "no attribute 'loss'",
    ),
    "AdamParams(lr=)": ("import mint\nmint.AdamParams(lr=1e-4)\n", "'lr'"),
    "create_lora(alpha=)": (
        "service_client.create_lora_training_client(base_model='m', rank=16, alpha=32)\n",
        "'alpha'",
    ),
    "unknown loss name": ("training_client.forward_backward(data, loss_fn='grpo')\n", "'grpo' is not one of"),
    "0.38 RestClient": ("import mint as tinker\nrest = tinker.RestClient()\n", "no attribute 'RestClient'"),
    "await sample": (
        "async def main():\n    resp = await sampler.sample(prompt=p, num_samples=4, sampling_params=sp)\n",
        "not awaitable",
    ),
    "single await of a training call": (
        "async def main():\n    out = await training_client.forward_backward_async(data, 'cross_entropy')\n"
        "    print(out.metrics)\n",
        "Future has no attribute 'metrics'",
    ),
    "0.38 future.coroutine()": (
        "fut = training_client.forward_backward(data, 'cross_entropy')\nfut.coroutine()\n",
        "no attribute 'coroutine'",
    ),
    "metrics on the concurrent future": (
        "fut = training_client.optim_step(types.AdamParams()).future()\nprint(fut.metrics)\n",
        "Future has no attribute 'metrics'",
    ),
    "future() of forward_backward_custom": (
        "fut = training_client.forward_backward_custom(data, my_loss)\nfut.future()\n",
        "APIFuture has no attribute 'future'",
    ),
    "0.38 await on a blocking factory": (
        "async def main():\n    tc = await service_client.create_lora_training_client(base_model='m')\n",
        "not awaitable",
    ),
    "coroutine used without await": (
        "fut = training_client.forward_backward_async(data, 'cross_entropy').result()\n",
        "coroutine",
    ),
    "SampleResponse.samples": (
        "resp = sampling_client.sample(prompt=p, num_samples=2, sampling_params=sp).result()\n"
        "for s in resp.samples: pass\n",
        "no attribute 'samples'",
    ),
    "SampledSequence attr through iteration": (
        "resp = sampling_client.sample(prompt=p, num_samples=2, sampling_params=sp).result()\n"
        "for s in resp.sequences:\n    print(s.text)\n",
        "SampledSequence has no attribute 'text'",
    ),
    "mint.mint kwargs": (
        "import mint\nmint.mint.forward_backward_reverse_kl(tc, reference_path='x', data=[])\n",
        "reference_path",
    ),
    "missing required argument": ("training_client.forward_backward(data)\n", "missing a required argument"),
    "ServiceClient unknown kwarg": ("import mint\nmint.ServiceClient(endpoint='x')\n", "endpoint"),
    "0.38 optimizer kwarg": ("training_client.optim_step(optim_params=mint.AdamParams())\n", "optim_params"),
    "get_checkpoint_archive_url_from_mint_path": (
        "rest_client.get_checkpoint_archive_url_from_mint_path(path)\n",
        "no attribute",
    ),
    "TensorData dtype literal": ("types.TensorData(data=[1], dtype='int32')\n", "'int32' is not one of"),
    "from-import of a missing name": ("from mint import RestClient\n", "no name 'RestClient'"),
    "attribute typed by its annotation": (
        "import mint\nclass Rollouts:\n    def __init__(self):\n"
        "        self.sampler: mint.SamplingClient | None = None\n"
        "    async def run(self, p, sp):\n"
        "        return await self.sampler.sample(prompt=p, num_samples=1, sampling_params=sp)\n",
        "not awaitable",
    ),
    "parameter typed by its annotation": (
        "import mint\ndef step(client: mint.TrainingClient, data):\n"
        "    return client.forward_backward(data, loss_fn='cross_entropy').result().loss\n",
        "no attribute 'loss'",
    ),
}


@pytest.mark.parametrize("name", sorted(BAD_SNIPPETS))
def test_checker_catches_bad_usage(name: str) -> None:
    source, expected = BAD_SNIPPETS[name]
    errors = check_source(source, name).errors
    assert any(expected in e for e in errors), f"{name}: expected an error mentioning {expected!r}, got {errors}"


GOOD_SNIPPET = """\
import asyncio
import mint
from mint import types

service_client = mint.ServiceClient(base_url="http://127.0.0.1:8000", api_key="sk-local")
tc = service_client.create_lora_training_client(base_model="Qwen/Qwen3-0.6B", rank=16)
tokens = [1, 2, 3, 4]
datum = types.Datum(
    model_input=types.ModelInput.from_ints(tokens[:-1]),
    loss_fn_inputs={"target_tokens": tokens[1:], "weights": [0.0, 1.0, 1.0]},
)
fb = tc.forward_backward([datum], loss_fn="cross_entropy")
op = tc.optim_step(types.AdamParams(learning_rate=1e-4))
out = fb.result()
op.result()
print(out.metrics["loss:sum"], out.loss_fn_outputs[0]["logprobs"].tolist())
sampler = tc.save_weights_and_get_sampling_client()
resp = sampler.sample(prompt=types.ModelInput.from_ints(tokens), num_samples=2,
                      sampling_params=types.SamplingParams(max_tokens=8, stop=["\\n"])).result()
for seq in resp.sequences:
    print(seq.tokens, seq.logprobs, seq.stop_reason)
path = tc.save_state("step-1").result().path
tc2 = service_client.create_lora_training_client(base_model="Qwen/Qwen3-0.6B", rank=16)
tc2.load_state_with_optimizer(path).result()
rest_client = service_client.create_rest_client()
url = rest_client.get_checkpoint_archive_url_from_tinker_path(path).result().url

concurrent_fb = tc.forward_backward([datum], loss_fn="cross_entropy").future()
print(concurrent_fb.result().metrics, concurrent_fb.done())

async def main():
    fut = await tc.forward_backward_async([datum], "cross_entropy")
    res = await fut
    print(res.metrics, fut.future().result().metrics)
    resp = await sampler.sample_async(prompt=datum.model_input, num_samples=1,
                                      sampling_params=types.SamplingParams(max_tokens=4))
    print(resp.sequences[0].tokens)
"""


def test_checker_accepts_correct_usage() -> None:
    checker = check_source(GOOD_SNIPPET, "good")
    assert checker.errors == []
    # The good snippet exercises the type tracking end to end, not just name lookups.
    assert checker.calls_checked >= 15


def test_wrong_markers_are_honoured() -> None:
    text = (
        "```python wrong\nmint.AdamParams(lr=1)\n```\n"
        "```python\n# wrong: 0.38 style\nmint.AdamParams(lr=1)\n```\n"
        "```python\nmint.AdamParams(learning_rate=1)\n```\n"
        "There is no ~~`result.loss`~~; use `out.metrics['loss:sum']` and `mint.AdamParams(lr=1)`.\n"
    )
    blocks = markdown_blocks(text, "t")
    assert len(blocks) == 1 and "learning_rate" in blocks[0][1]
    spans = [code for _, code in inline_spans(text, "t")]
    assert "result.loss" not in spans and "mint.AdamParams(lr=1)" in spans
    errors = [e for label, code in inline_spans(text, "t") for e in check_inline(label, code)]
    assert len(errors) == 1 and "'lr'" in errors[0]


def test_strip_jinja_keeps_python() -> None:
    template = (
        "{# header #}\nimport mint\n{% if kind == 'grpo' %}\nLOSS = {{ loss_fn | tojson }}\n{% endif %}\n"
        "params = mint.SamplingParams(max_tokens={{ max_tokens }}, stop_token_ids=[1])\n"
    )
    source = strip_jinja(template)
    errors = check_source(source, "tmpl").errors
    assert any("stop_token_ids" in e for e in errors)


def test_templates_that_only_parse_when_rendered_are_still_checked(tmp_path) -> None:
    # Stripping the tags keeps both branches, which here is not valid Python; rendering picks one.
    template = tmp_path / "t.py.j2"
    template.write_text(
        "import mint\n{% if use_if %}\nif True:\n{% else %}\nwhile False:\n{% endif %}\n"
        "    mint.AdamParams(lr={{ lr | py }})\n",
        encoding="utf-8",
    )
    how, source = template_python(template, root=tmp_path)
    assert how == "rendered"
    assert any("'lr'" in e for e in check_source(source, "t").errors)


# ----------------------------------------------------------------------------------------------
# The real scans
# ----------------------------------------------------------------------------------------------


def _doc_units(markdown: list[Path] | None = None, concept_maps: list[Path] | None = None) -> list[tuple[str, str, bool]]:
    """(label, code, partial) for every code unit in the docs and concept maps."""
    units: list[tuple[str, str, bool]] = []
    for path in markdown if markdown is not None else [ROOT / rel for rel in MARKDOWN_DOCS]:
        if not path.exists():
            continue
        text = path.read_text(encoding="utf-8")
        units += [(label, code, False) for label, code in markdown_blocks(text, path.name)]
        units += [(label, code, True) for label, code in inline_spans(text, path.name)]
    for path in concept_maps if concept_maps is not None else concept_files():
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        for concept in data["concepts"]:
            label = f"{path.name}:{concept['id']}"
            after = concept["after"]
            if not is_wrong_block("", after):
                units.append((f"{label}:after", after, False))
            prose = [concept.get("mint", ""), concept.get("explanation", ""), *concept.get("pitfalls", [])]
            for text in prose:
                units += [(f"{label}:{lab.split(':', 2)[-1]}", code, True) for lab, code in inline_spans(text, label)]
        for text in (data.get("summary", ""),):
            units += [(lab, code, True) for lab, code in inline_spans(text, path.name)]
    return units


def _scan(units: list[tuple[str, str, bool]]) -> tuple[list[str], int]:
    errors: list[str] = []
    calls = 0
    for label, code, partial in units:
        if partial:
            errors += check_inline(label, code)
        else:
            checker = check_source(code, label)
            errors += checker.errors
            calls += checker.calls_checked
    return errors, calls


def test_the_scan_reports_bad_docs_and_concept_maps(tmp_path) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text("```python\nparams = types.SamplingParams(stop_token_ids=[2])\n```\nUse `mint.AdamParams(lr=1)`.\n")
    concept_map = tmp_path / "fw.yaml"
    concept_map.write_text(
        yaml.safe_dump(
            {
                "framework": "fw", "title": "t", "summary": "s",
                "concepts": [{
                    "id": "c", "source": "s", "mint": "`service_client.create_lora_training_client(base_model='m', alpha=8)`",
                    "explanation": "e", "before": "anything(lr=1)", "pitfalls": ["p"],
                    "after": "out = training_client.forward_backward(data, 'cross_entropy').result()\nprint(out.loss)\n",
                }],
            }
        )
    )
    errors, _ = _scan(_doc_units([doc], [concept_map]))
    assert len(errors) == 4, errors
    for expected in ("stop_token_ids", "'lr'", "'alpha'", "no attribute 'loss'"):
        assert any(expected in e for e in errors), expected


def test_docs_use_only_real_sdk_names() -> None:
    units = _doc_units()
    blocks = [u for u in units if not u[2]]
    # The docs must actually contain code: SKILL.md + cheatsheet + six concept maps.
    assert len(blocks) >= 60, f"only {len(blocks)} code blocks found; are the docs and concept maps there?"
    errors, calls = _scan(units)
    assert not errors, "SDK misuse in the docs:\n" + "\n".join(errors)
    assert calls >= 150, f"only {calls} SDK calls were checked; the tracker is not seeing the docs' code"


def test_scaffolds_use_only_real_sdk_names() -> None:
    templates = scaffold_templates()
    if not templates:
        pytest.skip("no scaffolds/**/*.j2 yet")
    errors: list[str] = []
    for path in templates:
        how, source = template_python(path)
        label = str(path.relative_to(ROOT))
        if how == "unparseable":
            errors.append(f"{label}: neither stripping the jinja tags nor rendering gives valid Python")
            continue
        errors += check_source(source, f"{label} ({how})").errors
    assert not errors, "SDK misuse in the scaffolds:\n" + "\n".join(errors)


@pytest.mark.parametrize("kind", ["sft", "grpo", "dpo", "distill"])
def test_rendered_scaffolds_use_only_real_sdk_names(kind: str) -> None:
    from mint_migrate.render import ScaffoldOptions, render_scaffold

    try:
        source = render_scaffold(ScaffoldOptions(kind=kind))
    except NotImplementedError:
        pytest.skip("render_scaffold is not implemented yet")
    checker = check_source(source, f"render_scaffold({kind})")
    assert not checker.errors, "\n".join(checker.errors)
    assert checker.calls_checked >= 5, f"{kind}: the rendered train.py makes almost no SDK calls the checker saw"


def test_the_rendered_companion_uses_only_real_sdk_names() -> None:
    """mint_run.py, which every train.py imports: its checkpoint, resume and sampling calls."""
    from mint_migrate.render import render_companion

    checker = check_source(render_companion(), "render_companion()")
    assert not checker.errors, "\n".join(checker.errors)
    assert checker.calls_checked >= 5, "mint_run.py makes almost no SDK calls the checker saw"

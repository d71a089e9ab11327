#!/usr/bin/env python
"""Generate mint_api_reference.txt from the INSTALLED MinT SDK (mindlab-toolkit + tinker).

Every public name of `mint`, `mint.mint` and `mint.types`, and for each class: its bases, its
constructor, its pydantic / dataclass fields, and every public method and property with its
signature and return type. The output is deterministic (sorted, no memory addresses), so a test
can regenerate it and fail on any difference.

    python scripts/gen_api_reference.py            # rewrite mint_api_reference.txt
    python scripts/gen_api_reference.py --check    # exit 1 if the file differs from the SDK
    python scripts/gen_api_reference.py --stdout   # print instead of writing
"""

from __future__ import annotations
import __future__

import argparse
import ast
import dataclasses
import difflib
import enum
import inspect
import re
import sys
import textwrap
import types as pytypes
import typing
from pathlib import Path

DEFAULT_OUTPUT = Path(__file__).resolve().parent.parent / "mint_api_reference.txt"

# Namespaces documented, in this order. mint.types has no __all__: its public names are the
# non-underscore attributes that are not modules.
NAMESPACES = ("mint", "mint.mint", "mint.types")

# Classes that no namespace exports but that public methods hand out, so users do hold them.
RETURNED_ONLY = {
    "RestClient": ("tinker.lib.public_interfaces.rest_client", "RestClient", "ServiceClient.create_rest_client()"),
}

# Only members defined by the SDK itself are listed; pydantic/object/Exception plumbing is not.
SDK_MODULE_PREFIXES = ("tinker", "mint")

_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def _clean(text: str) -> str:
    """Drop memory addresses and collapse whitespace so reprs are stable across runs."""
    text = _ADDRESS.sub("", text)
    return re.sub(r"\s+", " ", text).strip()


def _is_sdk(obj: object) -> bool:
    module = getattr(obj, "__module__", None) or ""
    return module.split(".")[0] in SDK_MODULE_PREFIXES


def _annotation(ann: object) -> str:
    if ann is inspect.Parameter.empty:
        return ""
    if isinstance(ann, str):
        return ann
    if isinstance(ann, type) and not typing.get_args(ann):
        return ann.__qualname__ if ann.__module__ == "builtins" else ann.__name__
    return _clean(inspect.formatannotation(ann).replace("typing.", ""))


def _signature(fn: object, *, drop_self: bool) -> str:
    """`(a: int, *, b: str = 'x') -> R`, with string annotations printed bare (no quotes)."""
    try:
        sig = inspect.signature(fn)  # follows __wrapped__ through sync_only / capture_exceptions
    except (TypeError, ValueError):
        return "(...)"
    params = list(sig.parameters.values())
    if drop_self and params and params[0].name in ("self", "cls"):
        params = params[1:]
    parts: list[str] = []
    star_done = False
    for i, p in enumerate(params):
        if p.kind is p.KEYWORD_ONLY and not star_done:
            parts.append("*")
            star_done = True
        if p.kind is p.VAR_POSITIONAL:
            star_done = True
        prefix = {p.VAR_POSITIONAL: "*", p.VAR_KEYWORD: "**"}.get(p.kind, "")
        text = prefix + p.name
        if p.annotation is not p.empty:
            text += f": {_annotation(p.annotation)}"
        if p.default is not p.empty:
            text += f" = {_clean(repr(p.default))}"
        parts.append(text)
        if p.kind is p.POSITIONAL_ONLY and (i + 1 == len(params) or params[i + 1].kind is not p.POSITIONAL_ONLY):
            parts.append("/")
    ret = sig.return_annotation
    arrow = f" -> {_annotation(ret)}" if ret is not sig.empty else ""
    return _clean(f"({', '.join(parts)}){arrow}")


def _is_async(fn: object) -> bool:
    return inspect.iscoroutinefunction(inspect.unwrap(fn))  # type: ignore[arg-type]


def _namespace(path: str) -> pytypes.ModuleType:
    """`mint.types` is an attribute of `mint` (it is tinker.types), not an importable submodule."""
    import importlib

    head, *rest = path.split(".")
    module = importlib.import_module(head)
    for part in rest:
        module = getattr(module, part)
    return module


def _namespace_names(module: pytypes.ModuleType) -> list[str]:
    names = getattr(module, "__all__", None)
    if names is None:
        names = [
            n
            for n, obj in vars(module).items()
            # `from __future__ import annotations` leaves an `annotations` feature object in mint.types
            if not n.startswith("_") and not isinstance(obj, (pytypes.ModuleType, __future__._Feature))
        ]
    return sorted(set(names))


def _kind(obj: object) -> str:
    if isinstance(obj, pytypes.ModuleType):
        return "module"
    if inspect.isclass(obj) and obj.__module__ == "builtins":
        return "type alias"
    if inspect.isclass(obj):
        if issubclass(obj, BaseException):
            return "exception"
        if _is_pydantic(obj):
            return "pydantic model"
        if dataclasses.is_dataclass(obj):
            return "dataclass"
        if issubclass(obj, enum.Enum):
            return "enum"
        if typing.is_typeddict(obj):
            return "TypedDict"
        return "class"
    if inspect.isfunction(obj) or inspect.isbuiltin(obj):
        return "async function" if _is_async(obj) else "function"
    if isinstance(obj, (str, int, float, bool)):
        return "constant"
    if typing.get_origin(obj) is not None or isinstance(obj, typing.TypeVar) or type(obj).__module__ == "typing":
        return "type alias"
    return type(obj).__name__


def _is_pydantic(cls: type) -> bool:
    return hasattr(cls, "model_fields") and hasattr(cls, "model_config")


def _bases(cls: type) -> str:
    names = [b.__name__ for b in cls.__bases__ if b is not object]
    return ", ".join(names)


def _pydantic_fields(cls: type) -> list[str]:
    lines = []
    for name, field in sorted(cls.model_fields.items()):
        ann = _annotation(field.annotation)
        if field.is_required():
            default = ""
        elif field.default_factory is not None:
            default = f" = {getattr(field.default_factory, '__name__', 'factory')}()"
        else:
            default = f" = {_clean(repr(field.default))}"
        alias = f"  (alias {field.alias!r})" if field.alias and field.alias != name else ""
        lines.append(f"    {name}: {ann}{default}{alias}")
    return lines


def _dataclass_fields(cls: type) -> list[str]:
    lines = []
    for field in sorted(dataclasses.fields(cls), key=lambda f: f.name):
        if field.name.startswith("_"):
            continue
        if field.default is not dataclasses.MISSING:
            default = f" = {_clean(repr(field.default))}"
        elif field.default_factory is not dataclasses.MISSING:
            default = f" = {getattr(field.default_factory, '__name__', 'factory')}()"
        else:
            default = ""
        lines.append(f"    {field.name}: {_annotation(field.type)}{default}")
    return lines


def _config(cls: type) -> str:
    config = cls.model_config
    keys = ("extra", "frozen", "arbitrary_types_allowed")
    parts = [f"{k}={config[k]!r}" for k in keys if k in config]
    return ", ".join(parts)


def _members(cls: type) -> list[str]:
    """Public methods, properties and class attributes the SDK defines on cls or its SDK bases."""
    seen: dict[str, str] = {}
    for klass in cls.__mro__:
        if not _is_sdk(klass):
            continue
        for name, raw in vars(klass).items():
            if name.startswith("_") or name in seen or name == "model_config":
                continue
            if _is_pydantic(cls) and name in cls.model_fields:
                continue
            if dataclasses.is_dataclass(cls) and name in {f.name for f in dataclasses.fields(cls)}:
                if not isinstance(raw, (property, pytypes.FunctionType)):
                    continue
            seen[name] = _member_line(name, raw)
    return [seen[name] for name in sorted(seen)]


def _instance_attributes(cls: type) -> list[str]:
    """Public `self.x = ...` attributes set in the SDK's own __init__ methods (e.g. TrainingClient.holder)."""
    names: set[str] = set()
    for klass in cls.__mro__:
        init = vars(klass).get("__init__")
        if not _is_sdk(klass) or init is None:
            continue
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(init)))
        except (OSError, TypeError, SyntaxError):
            continue
        for node in ast.walk(tree):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
            for t in targets:
                if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                    if not t.attr.startswith("_"):
                        names.add(t.attr)
    return [f"    {n}    (instance attribute)" for n in sorted(names)]


def _member_line(name: str, raw: object) -> str:
    if isinstance(raw, property):
        ret = _annotation(inspect.signature(raw.fget).return_annotation) if raw.fget else ""
        return f"    @property {name} -> {ret or '?'}"
    if hasattr(raw, "func") and type(raw).__name__ == "cached_property":
        ret = _annotation(inspect.signature(raw.func).return_annotation)
        return f"    @cached_property {name} -> {ret or '?'}"
    if isinstance(raw, staticmethod):
        fn = raw.__func__
        prefix = "async " if _is_async(fn) else ""
        return f"    @staticmethod {prefix}{name}{_signature(fn, drop_self=False)}"
    if isinstance(raw, classmethod):
        fn = raw.__func__
        prefix = "async " if _is_async(fn) else ""
        return f"    @classmethod {prefix}{name}{_signature(fn, drop_self=True)}"
    if callable(raw):
        prefix = "async " if _is_async(raw) else ""
        return f"    {prefix}{name}{_signature(raw, drop_self=True)}"
    return f"    {name} = {_clean(repr(raw))}"


def _member_sort_key(line: str) -> str:
    words = line.split()
    while words and (words[0].startswith("@") or words[0] == "async"):
        words = words[1:]
    return re.split(r"[(\s]", words[0])[0] if words else line


def _class_block(title: str, cls: type, reached_as: list[str], note: str | None) -> list[str]:
    kind = _kind(cls)
    bases = _bases(cls)
    lines = [f"class {title}" + (f"({bases})" if bases else "") + f"    [{kind}; defined in {cls.__module__}]"]
    if note:
        lines.append(f"  {note}")
    if len(reached_as) > 1:
        lines.append("  also: " + ", ".join(n for n in reached_as if n != title))
    if _is_pydantic(cls):
        lines.append(f"  config: {_config(cls)}")
        fields = _pydantic_fields(cls)
        lines.append("  fields:" if fields else "  fields: (none)")
        lines += fields
    elif dataclasses.is_dataclass(cls):
        frozen = cls.__dataclass_params__.frozen  # type: ignore[attr-defined]
        lines.append(f"  dataclass: frozen={frozen}")
        lines.append(f"  constructor: {cls.__name__}{_signature(cls, drop_self=False)}")
        fields = _dataclass_fields(cls)
        if fields:
            lines.append("  fields:")
            lines += fields
    elif typing.is_typeddict(cls):
        hints = typing.get_type_hints(cls)
        lines.append("  keys:")
        lines += [f"    {k}: {_annotation(v)}" for k, v in sorted(hints.items())]
    elif issubclass(cls, enum.Enum):
        lines.append("  members: " + ", ".join(f"{m.name}={m.value!r}" for m in cls))
    elif "__init__" in vars(cls) or any("__init__" in vars(k) for k in cls.__mro__[1:] if _is_sdk(k)):
        lines.append(f"  constructor: {cls.__name__}{_signature(cls, drop_self=False)}")
    members = _members(cls)
    defined = {_member_sort_key(m) for m in members}
    members += [a for a in _instance_attributes(cls) if _member_sort_key(a) not in defined]
    members.sort(key=_member_sort_key)
    if members:
        lines.append("  members:")
        lines += members
    return lines


def _value_line(name: str, obj: object) -> str:
    kind = _kind(obj)
    if kind in ("function", "async function"):
        prefix = "async def " if kind == "async function" else "def "
        return f"  {prefix}{name}{_signature(obj, drop_self=False)}"
    if kind == "module":
        return f"  {name}    [module {obj.__name__}]"  # type: ignore[attr-defined]
    if kind == "constant":
        return f"  {name} = {obj!r}"
    if inspect.isclass(obj):
        return f"  {name} = {obj.__name__}    [{kind}]" if kind == "type alias" else f"  {name}    [{kind}]"
    return f"  {name} = {_clean(_annotation(obj))}    [{kind}]"


def generate() -> str:
    import importlib

    import mint
    import mint.mint
    import tinker

    from mint_migrate import sdk_facts

    pinned = (sdk_facts.MINDLAB_TOOLKIT_VERSION, sdk_facts.TINKER_VERSION)
    if (mint.__version__, tinker.__version__) != pinned:
        raise SystemExit(
            f"The installed SDK is mindlab-toolkit {mint.__version__} / tinker {tinker.__version__}, but "
            f"mint-migrate is written for {pinned[0]} / {pinned[1]} (mint_migrate/sdk_facts.py). Install those "
            "(pip install mindlab-toolkit==" + pinned[0] + "), or update sdk_facts.py and its tests first."
        )
    out = [
        "MinT SDK API reference (GENERATED: do not edit by hand)",
        f"mindlab-toolkit {mint.__version__} (import mint), tinker {tinker.__version__}",
        "Regenerate: python scripts/gen_api_reference.py   Check: python scripts/gen_api_reference.py --check",
        "Signatures come from inspect.signature on the installed SDK; annotations are printed as the SDK spells",
        "them ('types.X' means mint.types.X). Async methods are marked 'async': await them once to get what",
        "their annotation says (an APIFuture then needs a second await or .result()).",
        "",
    ]

    classes: dict[int, tuple[type, list[str]]] = {}
    notes: dict[str, str] = {}
    for ns in NAMESPACES:
        module = _namespace(ns)
        names = _namespace_names(module)
        out.append(f"== namespace {ns} ({len(names)} names) ==")
        for name in names:
            obj = getattr(module, name)
            path = f"{ns}.{name}"
            if inspect.isclass(obj) and _kind(obj) != "type alias":
                classes.setdefault(id(obj), (obj, []))[1].append(path)
            out.append(_value_line(name, obj))
        out.append("")

    for label, (module_name, attr, how) in sorted(RETURNED_ONLY.items()):
        cls = getattr(importlib.import_module(module_name), attr)
        classes.setdefault(id(cls), (cls, []))[1].append(label)
        notes[label] = f"not exported; get one from {how}"

    out.append("== classes ==")
    out.append("")
    blocks = []
    for cls, paths in classes.values():
        paths = sorted(paths)
        blocks.append((paths[0], cls, paths))
    for title, cls, paths in sorted(blocks, key=lambda b: b[0]):
        out += _class_block(title, cls, paths, notes.get(title))
        out.append("")
    out += _choices(sdk_facts)
    return "\n".join(out).rstrip() + "\n"


def _choices(facts) -> list[str]:
    """mint-migrate's own defaults for this SDK, from mint_migrate/sdk_facts.py (not SDK API)."""
    configs = facts.loss_fn_config_defaults()
    sent = "; ".join(f"{loss} {configs[loss] if configs[loss] else 'none'}" for loss in facts.RL_LOSSES)
    keys = "; ".join(f"{loss}: {', '.join(k)}" for loss, k in facts.LOSS_FN_CONFIG_KEYS.items() if k)
    return [
        "== mint-migrate's defaults for this SDK (mint_migrate/sdk_facts.py; not part of the SDK) ==",
        f"  loss_fn: {', '.join(facts.LOSS_NAMES)} (not in 0.22.0: {', '.join(facts.LATER_SDK_LOSSES)})",
        f"  loss_fn_config keys: {keys} (ppo/cispo take ratio bounds, not epsilons)",
        f"  loss_fn_config the scaffolds send: {sent}",
        f"  default base model: {facts.DEFAULT_BASE_MODEL}; default LoRA rank: {facts.DEFAULT_LORA_RANK}",
        f"  tinker-cookbook: <= {facts.TINKER_COOKBOOK_MAX_VERSION} next to tinker {facts.TINKER_VERSION}",
        f"  MINT_BASE_URL unset: import mint uses {facts.MINT_DEFAULT_BASE_URL}",
        "",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the file differs from the installed SDK")
    parser.add_argument("--stdout", action="store_true", help="print the reference instead of writing it")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, help="file to write or check")
    args = parser.parse_args(argv)

    text = generate()
    if args.stdout:
        sys.stdout.write(text)
        return 0
    if args.check:
        current = args.output.read_text(encoding="utf-8") if args.output.exists() else ""
        if current == text:
            print(f"{args.output} matches the installed SDK.")
            return 0
        diff = difflib.unified_diff(
            current.splitlines(), text.splitlines(), "committed", "installed SDK", lineterm="", n=1
        )
        sys.stdout.write("\n".join(list(diff)[:80]) + "\n")
        print(f"{args.output} is out of date: run python scripts/gen_api_reference.py", file=sys.stderr)
        return 1
    args.output.write_text(text, encoding="utf-8")
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

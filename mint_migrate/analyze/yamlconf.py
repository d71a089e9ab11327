"""YAML configs (TRL recipes, verl hydra configs, torchforge configs) flattened to dotted keys with lines.

`a: {b: {c: 1}}` becomes `{"a.b.c": Value(1, file:line)}`. Unquoted scalars are read the way
OmegaConf reads them (`1e-6` is a float, which PyYAML alone would leave a string). Whole-value
interpolations `${other.key}` are resolved within the file and traced to the line that defines the
value; `${oc.env:...}` and partial interpolations stay unresolved (a string with `${`).
"""

import math
import re
from typing import Any

import yaml

from mint_migrate.analyze.evidence import Level, Loc, Value
from mint_migrate.analyze.scalars import parse_scalar
from mint_migrate.errors import MintMigrateError

_INTERP = re.compile(r"\$\{([^${}]+)\}")

# A config is a few hundred keys; these bounds are far above that and far below what hurts. Without
# them a 374-byte alias bomb expands to billions of nodes, and deep nesting or a recursive alias
# exhausts Python's stack.
MAX_YAML_CHARS = 2_000_000
MAX_DEPTH = 100
MAX_ALIASES = 10_000
MAX_NODES = 200_000  # with every alias expanded


class _BoundedLoader(yaml.SafeLoader):
    """PyYAML's safe composer, refusing (a ComposerError, so a parse error) nesting deeper than
    MAX_DEPTH and more than MAX_ALIASES aliases."""

    def __init__(self, stream: str):
        super().__init__(stream)
        self._depth = 0
        self._aliases = 0

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            self._aliases += 1
            if self._aliases > MAX_ALIASES:
                raise _refused(f"more than {MAX_ALIASES} aliases", self.peek_event().start_mark)
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise _refused(f"nested deeper than {MAX_DEPTH} levels", self.peek_event().start_mark)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def _refused(problem: str, mark) -> yaml.YAMLError:
    return yaml.composer.ComposerError(None, None, problem, mark)


def _check_expansion(root: yaml.Node) -> None:
    """Refuse a recursive alias, or one whose expansion would exceed MAX_NODES (an alias bomb).
    Iterative, with every shared node sized once, so the check itself costs the document's size."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        if id(node) in sizes:
            continue
        children = _children(node)
        if children_done:
            open_nodes.discard(id(node))
            sizes[id(node)] = size = 1 + sum(sizes[id(child)] for child in children)
            if size > MAX_NODES:
                raise _refused(f"expands to more than {MAX_NODES} values (an alias bomb?)", node.start_mark)
            continue
        if id(node) in open_nodes:
            raise _refused("an alias refers to a node that contains it (a recursive alias)", node.start_mark)
        open_nodes.add(id(node))
        stack.append((node, True))
        for child in children:
            if id(child) in open_nodes:
                raise _refused("an alias refers to a node that contains it (a recursive alias)", child.start_mark)
            if id(child) not in sizes:
                stack.append((child, False))


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def compose_bounded(text: str) -> yaml.Node | None:
    """The YAML node graph of `text`, within the bounds above (else a yaml.YAMLError)."""
    if len(text) > MAX_YAML_CHARS:
        raise _refused(f"the file is larger than {MAX_YAML_CHARS:,} characters", None)
    loader = _BoundedLoader(text)
    try:
        node = loader.get_single_node()
    finally:
        loader.dispose()
    if node is not None:
        _check_expansion(node)
    return node


class YamlConfig:
    def __init__(self, text: str, label: str, level: Level = Level.CONFIG):
        self.label = label
        self.level = level
        self.values: dict[str, Value] = {}
        self.item_lines: dict[str, int] = {}  # `key.0.path` -> line, for mappings inside lists
        self.text_head = text[:2048]  # for directives in the first comments (hydra's `# @package`)
        self.skipped: list[str] = []  # a composition's entries that could not be read (hydra.py)
        try:
            node = compose_bounded(text)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
            line = mark.line + 1 if mark else 1
            problem = getattr(exc, "problem", None) or str(exc)
            raise MintMigrateError(
                f"{label}:{line}: cannot parse YAML: {problem}. Fix the file, or leave it out of --config."
            ) from exc
        if node is not None and not isinstance(node, yaml.MappingNode):
            line = node.start_mark.line + 1
            raise MintMigrateError(
                f"{label}:{line}: the YAML document is not a mapping of config keys; "
                "pass a training config (key: value), or leave this file out."
            )
        self._loader = yaml.SafeLoader("")
        if node is not None:
            self._walk(node, "")
        self._resolve_interpolations()

    @classmethod
    def from_values(cls, label: str, values: dict[str, Value]) -> "YamlConfig":
        """A config made of values read elsewhere (a hydra composition of several files)."""
        config = cls("{}", label)
        config.values = dict(values)
        return config

    def __contains__(self, key: str) -> bool:
        return key in self.values

    def get(self, key: str) -> Value | None:
        return self.values.get(key)

    def keys(self) -> list[str]:
        return list(self.values)

    def under(self, prefix: str) -> dict[str, Value]:
        """Keys below `prefix.` with the prefix removed."""
        cut = len(prefix) + 1
        return {k[cut:]: v for k, v in self.values.items() if k.startswith(prefix + ".")}

    def _walk(self, node: yaml.Node, prefix: str) -> None:
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                continue
            if key_node.value == "<<":  # merge keys: walk the merged mapping in place
                if isinstance(value_node, yaml.MappingNode):
                    self._walk(value_node, prefix)
                continue
            key = f"{prefix}{key_node.value}"
            line = key_node.start_mark.line + 1
            if isinstance(value_node, yaml.MappingNode):
                self._walk(value_node, key + ".")
                continue
            if isinstance(value_node, yaml.SequenceNode):
                for i, item in enumerate(value_node.value):
                    if isinstance(item, yaml.MappingNode):
                        for k, _ in item.value:
                            if isinstance(k, yaml.ScalarNode):
                                self.item_lines[f"{key}.{i}.{k.value}"] = k.start_mark.line + 1
            self.values[key] = Value(self._construct(value_node), Loc(self.label, line), self.level)

    def _construct(self, node: yaml.Node) -> Any:
        if isinstance(node, yaml.ScalarNode):
            if node.style is None and node.tag == "tag:yaml.org,2002:str":
                return parse_scalar(node.value)
            return self._loader.construct_object(node, deep=True)
        if isinstance(node, yaml.SequenceNode):
            return [self._construct(child) for child in node.value]
        if isinstance(node, yaml.MappingNode):
            return {k.value: self._construct(v) for k, v in node.value if isinstance(k, yaml.ScalarNode)}
        return None

    def _resolve_interpolations(self) -> None:
        for key in list(self.values):
            self.values[key] = self._resolve(key, set())

    def _resolve(self, key: str, seen: set[str]) -> Value:
        value = self.values[key]
        if not isinstance(value.value, str) or "${" not in value.value:
            return value
        if key in seen:
            return value
        m = _INTERP.fullmatch(value.value.strip())
        if not m:
            return self._resolve_partial(key, value, seen)
        ref = self._ref(key, m.group(1))
        if ref not in self.values:
            return value
        resolved = self._resolve(ref, seen | {key})
        self.values[ref] = resolved
        return resolved

    def _ref(self, key: str, written: str) -> str:
        ref = written.strip()
        if ref.startswith("."):  # relative: a sibling of this key
            ref = key.rsplit(".", 1)[0] + ref if "." in key else ref[1:]
        return ref

    def _resolve_partial(self, key: str, value: Value, seen: set[str]) -> Value:
        """`hf://${model}` with `model: Qwen/Qwen3-8B` in the file: the composed text, at this key's own
        line. Left as written when any part is not a plain value of the file (`${oc.env:HOME}`)."""
        def part(m: re.Match) -> str:
            ref = self._ref(key, m.group(1))
            if ref not in self.values:
                raise KeyError(ref)
            resolved = self._resolve(ref, seen | {key})
            if not isinstance(resolved.value, str | int | float) or (isinstance(resolved.value, str)
                                                                     and "${" in resolved.value):
                raise KeyError(ref)
            return str(resolved.value)

        try:
            text = _INTERP.sub(part, value.value)
        except KeyError:
            return value
        return value.with_value(_arithmetic(text))


# Resolvers projects register for sizes (`seq_len: ${sum:${max_req_tokens},${max_res_tokens}}`), once
# their arguments are numbers. Any other resolver stays as written.
_ARITHMETIC = {"sum": sum, "add": sum, "max": max, "min": min, "mul": math.prod, "multiply": math.prod}
_RESOLVER = re.compile(r"\$\{(\w+):\s*([-+0-9.eE]+(?:\s*,\s*[-+0-9.eE]+)*)\s*\}")


def _arithmetic(text: str) -> Any:
    m = _RESOLVER.fullmatch(text.strip())
    if m is None or m.group(1) not in _ARITHMETIC:
        return text
    try:
        numbers = [float(n) if any(c in n for c in ".eE") else int(n) for n in m.group(2).split(",")]
    except ValueError:
        return text
    return _ARITHMETIC[m.group(1)](numbers)


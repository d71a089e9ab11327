"""Hydra config composition: `@hydra.main(config_path=..., config_name=...)` scripts, their primary
config's `defaults:` list and the config groups it selects (`config/loss/dpo.yaml`), with the
group choices of the command line (`loss=dpo`). The result is one flattened config whose every
value keeps the file and line it came from; dotted overrides (`loss.beta=0.1`) are applied by the
reader, from the command line, at the COMMAND level."""

from collections.abc import Callable
from pathlib import Path

from mcp_server.analyze.evidence import Value
from mcp_server.analyze.pyvalues import PySource
from mcp_server.analyze.yamlconf import YamlConfig
from mcp_server.errors import MintMigrateError
from mcp_server.pyindex import string_value
from mcp_server.workspace import read_text_checked


def hydra_main(src: PySource) -> tuple[str, str] | None:
    """(config_path, config_name) of the script's `@hydra.main(...)`, if it has one."""
    for call in src.calls:
        if call.qualname != "hydra.main":
            continue
        path = string_value(call.kwarg_node("config_path")) or "."
        name = string_value(call.kwarg_node("config_name"))
        if name:
            return path, name
    return None


def compose(config_dir: Path, name: str, cli: dict[str, Value], label_for: Callable[[Path], str]) -> YamlConfig | None:
    """The primary config with its selected groups merged in; None when the files are not there."""
    primary = _load(config_dir / _yaml_name(name), label_for)
    if primary is None:
        return None
    defaults = primary.get("defaults")
    entries = defaults.value if defaults is not None and isinstance(defaults.value, list) else []
    own = {k: v for k, v in primary.values.items() if k != "defaults" and not k.startswith("defaults.")}
    merged: dict[str, Value] = {}
    self_first = bool(entries) and entries[0] == "_self_"
    if self_first:
        merged.update(own)
    for entry in entries:
        if not isinstance(entry, dict) or len(entry) != 1:
            continue
        group, option = next(iter(entry.items()))
        group = str(group).removeprefix("override ").strip()
        chosen = cli.get(group)
        option = chosen.value if chosen is not None and isinstance(chosen.value, str) else option
        if not isinstance(option, str) or option in {"null", "None"}:
            continue
        merged.update({f"{group}.{k}": v for k, v in _option_values(config_dir / group, option, label_for, 0).items()})
    if not self_first:
        merged.update(own)
    return YamlConfig.from_values(primary.label, merged)


_MAX_DEPTH = 8  # a defaults list that names itself must not loop


def _option_values(group_dir: Path, option: str, label_for: Callable[[Path], str], depth: int) -> dict[str, Value]:
    """One option of a config group (`model/llama.yaml`) with its own defaults list merged in: a plain
    entry is another option of the same group (`- base_model`), a `sub: option` entry a group nested
    in it (`model/sub/option.yaml`). The option's own values win unless `_self_` comes first."""
    config = _load(group_dir / _yaml_name(option), label_for)
    if config is None or depth > _MAX_DEPTH:
        return {}
    defaults = config.get("defaults")
    entries = defaults.value if defaults is not None and isinstance(defaults.value, list) else []
    own = {k: v for k, v in config.values.items() if k != "defaults" and not k.startswith("defaults.")}
    merged: dict[str, Value] = {}
    self_first = bool(entries) and entries[0] == "_self_"
    if self_first:
        merged.update(own)
    for entry in entries:
        if isinstance(entry, str) and entry != "_self_" and not entry.startswith("/"):
            merged.update(_option_values(group_dir, entry, label_for, depth + 1))
        elif isinstance(entry, dict) and len(entry) == 1:
            sub, chosen = next(iter(entry.items()))
            sub = str(sub).removeprefix("override ").strip()
            if isinstance(chosen, str) and chosen not in {"null", "None"} and not sub.startswith("/"):
                nested = _option_values(group_dir / sub, chosen, label_for, depth + 1)
                merged.update({f"{sub}.{k}": v for k, v in nested.items()})
    if not self_first:
        merged.update(own)
    return merged


def _yaml_name(name: str) -> str:
    return name if name.endswith((".yaml", ".yml")) else f"{name}.yaml"


def _load(path: Path, label_for: Callable[[Path], str]) -> YamlConfig | None:
    if not path.is_file():
        return None
    try:
        return YamlConfig(read_text_checked(path), label_for(path))  # the read fence
    except (MintMigrateError, OSError, UnicodeDecodeError):
        return None

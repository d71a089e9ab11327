"""Hydra config composition: `@hydra.main(config_path=..., config_name=...)` scripts, their primary
config's `defaults:` list and the config groups it selects (`config/loss/dpo.yaml`), with the
group choices of the command line (`loss=dpo`). The result is one flattened config whose every
value keeps the file and line it came from; dotted overrides (`loss.beta=0.1`) are applied by the
reader, from the command line, at the COMMAND level."""

from collections.abc import Callable
from pathlib import Path

from mint_migrate.analyze.evidence import Value
from mint_migrate.analyze.pyvalues import PySource
from mint_migrate.analyze.yamlconf import YamlConfig
from mint_migrate.errors import MintMigrateError
from mint_migrate.pyindex import string_value
from mint_migrate.workspace import read_text_checked


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
    skipped: list[str] = []
    composed = YamlConfig.from_values(primary.label, _merged(config_dir, primary, cli, label_for, 0, skipped))
    composed.skipped = skipped
    return composed


_MAX_DEPTH = 8  # a defaults list that names itself must not loop


def _merged(folder: Path, config: YamlConfig, cli: dict[str, Value], label_for: Callable[[Path], str],
            depth: int, skipped: list[str]) -> dict[str, Value]:
    """A config's values with its defaults list merged in. A plain entry is another config of the same
    folder (`- base_model` in `model/llama.yaml`); a `group: option` entry is `folder/group/option.yaml`,
    its keys under `group.`, the option chosen on the command line when it says (`loss=dpo`: top level
    only). The config's own values win unless `_self_` comes first."""
    defaults = config.get("defaults")
    entries = defaults.value if defaults is not None and isinstance(defaults.value, list) else []
    where = f"{defaults.loc}" if defaults is not None else config.label
    if "@package" in config.text_head:
        skipped.append(f"{config.label}:1: a `# @package` directive: hydra places this file's keys elsewhere; "
                       "its values are read under the group's name here, check them")
    own = {k: v for k, v in config.values.items() if k != "defaults" and not k.startswith("defaults.")}
    merged: dict[str, Value] = {}
    self_first = bool(entries) and entries[0] == "_self_"
    if self_first:
        merged.update(own)
    for entry in entries if depth <= _MAX_DEPTH else []:
        if isinstance(entry, str) and entry != "_self_" and not entry.startswith("/"):
            found = _load(folder / _yaml_name(entry), label_for)
            if found is not None:
                merged.update(_merged(folder, found, {}, label_for, depth + 1, skipped))
            else:
                skipped.append(f"{where}: defaults entry `{entry}`: no {_yaml_name(entry)} beside the config")
        elif isinstance(entry, str) and entry.startswith("/"):
            skipped.append(f"{where}: defaults entry `{entry}`: an absolute config path, not read")
        elif isinstance(entry, dict) and len(entry) == 1:
            group, option = next(iter(entry.items()))
            group = str(group).removeprefix("override ").strip()
            chosen = cli.get(group)
            option = chosen.value if chosen is not None and isinstance(chosen.value, str) else option
            if option is None or option in {"null", "None"}:
                continue
            if not isinstance(option, str) or group.startswith("/") or "${" in option:
                skipped.append(f"{where}: defaults entry `{group}: {option}`: "
                               + ("an absolute group, not read" if group.startswith("/") else "not a file name"))
                continue
            found = _load(folder / group / _yaml_name(option), label_for)
            if found is not None:
                nested = _merged(folder / group, found, {}, label_for, depth + 1, skipped)
                merged.update({f"{group}.{k}": v for k, v in nested.items()})
            else:
                skipped.append(f"{where}: defaults entry `{group}: {option}`: no {group}/{_yaml_name(option)} "
                               "beside the config")
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

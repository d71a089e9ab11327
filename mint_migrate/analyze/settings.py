"""Evidence -> the plan's Settings: the value each key would really have, with its source."""

from mint_migrate.analyze.evidence import LORA_PARTS, Evidence, Level
from mint_migrate.plan import SETTING_KEYS, LoraSetting, LoraValue, Setting, Settings


def build_settings(ev: Evidence) -> Settings:
    values: dict[str, Setting] = {}
    for key in SETTING_KEYS:
        if key == "lora":
            continue
        best = ev.best(key)
        if best is not None and coerce(best.value) is not None:
            values[key] = Setting(value=coerce(best.value), source=str(best.loc),
                                  confirmed_by="agent" if best.level == Level.CONFIRMED else None)
    parts = {part: ev.best(part) for part in LORA_PARTS}
    rank_off = parts["lora.rank"] is not None and _is_number(parts["lora.rank"].value) and parts["lora.rank"].value == 0
    if any(parts.values()) and not rank_off:  # rank 0: no adapter, a full fine-tune (Tinker's, OpenRLHF's)
        anchor = parts["lora.rank"] or next(v for v in parts.values() if v is not None)
        rank = parts["lora.rank"]
        alpha = parts["lora.alpha"]
        modules = parts["lora.target_modules"]
        lora = LoraValue(
            rank=int(rank.value) if rank is not None and _is_number(rank.value) else None,
            alpha=float(alpha.value) if alpha is not None and _is_number(alpha.value) else None,
            target_modules=_modules(modules.value) if modules is not None else None,
        )
        values["lora"] = LoraSetting(value=lora, source=str(anchor.loc),
                                     confirmed_by="agent" if anchor.level == Level.CONFIRMED else None)
    return Settings(**values)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _modules(value: object) -> list[str] | str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, list | tuple):
        return [str(v) for v in value]
    return None


def coerce(value: object):
    """A Setting value: a scalar, a list of strings or a list of numbers."""
    if isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list | tuple):
        if all(_is_number(v) for v in value):
            return [float(v) for v in value]
        return [str(v) for v in value]
    if isinstance(value, dict):
        return [str(k) for k in value]
    return None

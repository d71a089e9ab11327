"""Concept maps: how each source framework's ideas land on MinT.

The maps are data, one YAML file per framework beside this module. Each concept has an id,
aliases (the names people type: class names, config keys, CLI flags), the MinT equivalent, why,
a short before/after and the pitfalls.

Lookup is forgiving about spelling: case, dashes, underscores and spaces are ignored
(`--pretrain`, `pretrain`, `SFT_Trainer`), a hydra/CLI value is dropped
(`actor_rollout_ref.rollout.n=5`), and a dotted key matches on whole trailing segments
(`rollout.n` finds `actor_rollout_ref.rollout.n`; `trl.GRPOConfig` finds `GRPOConfig`).
An alias must name one concept only; the loader refuses a file where it does not.

Every `after` snippet is MinT code and is checked against the installed SDK (names, keywords,
return types) by tests/test_docs_sdk_usage.py, as are the inline `code` spans of `mint`,
`explanation` and `pitfalls`; a deliberately wrong name in that prose goes in strikethrough,
~~`result.loss`~~. `before` is the source framework's code and is not checked.
"""

import difflib
import re
from functools import cache
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, model_validator

from mint_migrate.errors import MintMigrateError, UnknownName

_DATA_DIR = Path(__file__).resolve().parent


class ConceptMapping(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str = Field(description="Stable concept id, e.g. 'sft_trainer'.")
    source: str = Field(description="The concept as the source framework names it.")
    mint: str = Field(description="The MinT (mindlab-toolkit 0.2.0 / tinker 0.22.0) equivalent.")
    explanation: str
    before: str = Field(description="A short example in the source framework.")
    after: str = Field(description="The same thing on MinT.")
    pitfalls: list[str] = Field(default_factory=list)
    aliases: list[str] = Field(default_factory=list)


class ConceptTable(BaseModel):
    """The answer of map_concept: one concept, or the whole table for a framework."""

    framework: str
    title: str
    summary: str
    concepts: list[ConceptMapping]


class _FrameworkFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    framework: str
    title: str
    aliases: list[str] = Field(default_factory=list)
    summary: str
    concepts: list[ConceptMapping]

    @model_validator(mode="after")
    def _names_are_unambiguous(self) -> "_FrameworkFile":
        owner: dict[str, str] = {}
        for c in self.concepts:
            for name in _names(c):
                key = _key(name, keep_value=True)
                if not key:
                    raise ValueError(f"{self.framework}: concept {c.id} has an empty name or alias")
                if owner.setdefault(key, c.id) != c.id:
                    raise ValueError(
                        f"{self.framework}: '{name}' names both {owner[key]} and {c.id}; keep it on one concept"
                    )
        return self


def _names(c: ConceptMapping) -> list[str]:
    """The names a concept is declared to answer to; each may belong to one concept only."""
    return [c.id, c.source, *c.aliases]


def _source_parts(c: ConceptMapping) -> list[str]:
    """The ' / ' parts of the source without parenthetical notes: 'TitanTrainer (formerly
    RLTrainer)' also answers to 'TitanTrainer'. Weaker than declared names, so overlaps are fine."""
    parts = [re.sub(r"\s*\(.*?\)", "", part).strip() for part in c.source.split(" / ")]
    return [p for p in parts if p]


def _key(name: str, *, keep_value: bool = False) -> str:
    """Normalise a name so 'SFTTrainer', 'sft-trainer', '--sft_trainer' and 'sft_trainer ' compare equal.

    A trailing `=value` (a hydra override or a flag with its value) is dropped unless keep_value:
    an alias may carry a value (`algorithm.adv_estimator=gae`) when one value means another concept.
    """
    name = name.strip().lower()
    if "=" in name and not keep_value:
        name = name.split("=", 1)[0]
    return re.sub(r"[^a-z0-9.=]+", "", name).strip(".")


def _dotted_match(wanted: str, key: str) -> bool:
    """`rollout.n` matches `actor_rollout_ref.rollout.n` and `trl.grpoconfig` matches `grpoconfig`."""
    return key.endswith("." + wanted) or wanted.endswith("." + key)


@cache
def _tables() -> dict[str, _FrameworkFile]:
    tables = {}
    for path in sorted(_DATA_DIR.glob("*.yaml")):
        try:
            table = _FrameworkFile.model_validate(yaml.safe_load(path.read_text(encoding="utf-8")))
        except (ValueError, yaml.YAMLError) as exc:  # pydantic's ValidationError is a ValueError
            raise MintMigrateError(f"Concept map {path.name} is invalid; fix the file:\n{exc}") from exc
        tables[table.framework] = table
    return tables


def frameworks() -> list[str]:
    """The frameworks that have a concept map, in a stable order."""
    return sorted(_tables())


def _closest(name: str, choices: list[str]) -> str:
    """The choice closest to `name`, compared in normalised form but shown as written."""
    by_key: dict[str, str] = {}
    for choice in choices:  # among spellings of one key, show the one closest to what was typed
        best = by_key.get(_key(choice))
        if best is None or _ratio(name, choice) > _ratio(name, best):
            by_key[_key(choice)] = choice
    match = difflib.get_close_matches(_key(name), list(by_key), n=1, cutoff=0.5)
    return f" Closest match: '{by_key[match[0]]}'." if match else ""


def _ratio(a: str, b: str) -> float:
    return difflib.SequenceMatcher(None, a, b).ratio()


def resolve_framework(name: str) -> str:
    wanted = _key(name)
    for fw, table in _tables().items():
        if wanted in {_key(fw), *(_key(a) for a in table.aliases)}:
            return fw
    known = frameworks()
    raise UnknownName(
        f"Unknown framework '{name}'. Known frameworks: {', '.join(known)}.{_closest(name.lower(), known)}"
    )


def _find(concepts: list[ConceptMapping], concept: str) -> list[ConceptMapping]:
    """Concepts matching `concept`, strongest rule first: a declared name with its value
    (`algorithm.adv_estimator=gae`), a declared name, a part of a source, a dotted suffix."""
    for keep_value in (True, False):
        wanted = _key(concept, keep_value=keep_value)
        hits = [c for c in concepts if wanted in {_key(n, keep_value=keep_value) for n in _names(c)}]
        if hits:
            return hits
    wanted = _key(concept)
    hits = [c for c in concepts if wanted in {_key(n) for n in _source_parts(c)}]
    if not hits and "." in wanted:
        hits = [c for c in concepts if any(_dotted_match(wanted, _key(n)) for n in _names(c) + _source_parts(c))]
    return hits


def map_concept(framework: str, concept: str | None = None) -> ConceptTable:
    """The whole concept table for `framework`, or only the concept matching `concept`."""
    fw = resolve_framework(framework)
    table = _tables()[fw]
    concepts = table.concepts
    if concept is not None and concept.strip():
        hits = _find(concepts, concept)
        if not hits:
            ids = [c.id for c in concepts]
            every_name = [n for c in concepts for n in _names(c) + _source_parts(c)]
            raise UnknownName(
                f"Unknown {fw} concept '{concept}'. Known concepts: {', '.join(ids)}."
                f"{_closest(concept, every_name)} The whole table: `mint-migrate map {fw}` at a shell, or "
                f"map_concept(framework='{fw}') with no concept."
            )
        concepts = hits[:1]
    return ConceptTable(framework=fw, title=table.title, summary=table.summary, concepts=concepts)

"""Concept maps: how each source framework's ideas land on MinT.

The maps are data, one YAML file per framework beside this module. Each concept has an id,
aliases (the names people type: class names, config keys, CLI flags), the MinT equivalent, why,
a short before/after and the pitfalls.
"""

import difflib
import re
from functools import cache
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field

from mcp_server.errors import UnknownName

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


def _key(name: str) -> str:
    """Normalise a name so 'SFTTrainer', 'sft-trainer' and 'sft_trainer ' compare equal."""
    return re.sub(r"[^a-z0-9.]+", "", name.lower())


@cache
def _tables() -> dict[str, _FrameworkFile]:
    tables = {}
    for path in sorted(_DATA_DIR.glob("*.yaml")):
        table = _FrameworkFile.model_validate(yaml.safe_load(path.read_text(encoding="utf-8")))
        tables[table.framework] = table
    return tables


def frameworks() -> list[str]:
    """The frameworks that have a concept map, in a stable order."""
    return sorted(_tables())


def _closest(name: str, choices: list[str]) -> str:
    match = difflib.get_close_matches(name, choices, n=1, cutoff=0.5)
    return f" Closest match: '{match[0]}'." if match else ""


def resolve_framework(name: str) -> str:
    wanted = _key(name)
    for fw, table in _tables().items():
        if wanted in {_key(fw), *(_key(a) for a in table.aliases)}:
            return fw
    known = frameworks()
    raise UnknownName(
        f"Unknown framework '{name}'. Known frameworks: {', '.join(known)}.{_closest(name.lower(), known)}"
    )


def map_concept(framework: str, concept: str | None = None) -> ConceptTable:
    """The whole concept table for `framework`, or only the concept matching `concept`."""
    fw = resolve_framework(framework)
    table = _tables()[fw]
    concepts = table.concepts
    if concept is not None and concept.strip():
        wanted = _key(concept)
        hits = [c for c in concepts if wanted in {_key(c.id), _key(c.source), *(_key(a) for a in c.aliases)}]
        if not hits:
            ids = [c.id for c in concepts]
            names = ids + [a for c in concepts for a in c.aliases]
            raise UnknownName(
                f"Unknown {fw} concept '{concept}'. Known concepts: {', '.join(ids)}."
                f"{_closest(concept, names)} Call map_concept with no concept for the whole table."
            )
        concepts = hits[:1]
    return ConceptTable(framework=fw, title=table.title, summary=table.summary, concepts=concepts)

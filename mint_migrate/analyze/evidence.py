"""What the analysis reads, and where: located values, their weight, and the evidence collector.

Every value the analysis reports carries a `Loc` (file label and line). When the same setting is
said in several places, the `Level` of each says which one the training run would really use:
a literal in the training code beats the command line, which beats a config file, which beats a
usage example in a docstring, which beats a default written in the script (argparse/dataclass).
"""

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

from mint_migrate.plan import Algorithm, Construct, PlanWarning


@dataclass(frozen=True)
class Loc:
    path: str
    line: int

    def __str__(self) -> str:
        return f"{self.path}:{self.line}"


class Level(IntEnum):
    DEFAULT = 0  # a default the script itself declares (argparse default=, dataclass field)
    EXAMPLE = 1  # a usage command quoted in a docstring or comment
    CONFIG = 2  # a config file (YAML recipe, hydra config)
    COMMAND = 3  # the launch command line (flags, hydra overrides)
    CODE = 4  # a literal written in the training code
    CONFIRMED = 5  # given by the caller (the agent) with a citation the tool checked


@dataclass(frozen=True)
class Value:
    value: Any
    loc: Loc
    level: Level = Level.CODE

    def with_value(self, value: Any) -> "Value":
        return Value(value, self.loc, self.level)


# The keys a framework analyzer may set: the Settings keys, with lora split into its parts.
LORA_PARTS = ("lora.rank", "lora.alpha", "lora.target_modules")


@dataclass
class AlgorithmVote:
    algorithm: Algorithm
    loc: Loc | None
    why: str
    weight: int


NOT_USED = re.compile(r"(^|[^a-z])(not[_ -]?used|unused|placeholder)($|[^a-z])|^x{3,}$", re.I)


@dataclass
class Evidence:
    """Collects what one framework analyzer found across all input files."""

    candidates: dict[str, list[Value]] = field(default_factory=dict)
    extras: dict[str, Value] = field(default_factory=dict)
    votes: list[AlgorithmVote] = field(default_factory=list)
    variant: str | None = None
    warnings: list[PlanWarning] = field(default_factory=list)
    constructs: list[Construct] = field(default_factory=list)
    tinker_fixes: list[Construct] = field(default_factory=list)
    # every setting the inputs state (harvest.py), offered to the readers before they run; what a
    # reader does not set itself, the planner fills afterwards through the synonym table
    stated: list = field(default_factory=list)
    meaning_of: Callable[[str, str], Any] | None = None

    def setting(self, key: str, value: Value | None) -> None:
        """Offer a value for a Settings key (or a lora part). None values say nothing and are dropped,
        and so does a dataset or model whose name says it is not used (`--dataset_name this_is_not_used`
        beside the flag the script really reads)."""
        if value is None or value.value is None or value.value == "":
            return
        if key in ("dataset", "base_model") and isinstance(value.value, str) and NOT_USED.search(value.value):
            return
        self.candidates.setdefault(key, []).append(value)

    def best(self, key: str) -> Value | None:
        """The value the run would use: highest level wins; among equals, the last one said."""
        values = self.candidates.get(key)
        if not values:
            return None
        top = max(v.level for v in values)
        return [v for v in values if v.level == top][-1]

    def harvested(self, concept: str, keep: Callable[[Any], bool] = lambda stated: True) -> Value | None:
        """The value the inputs state under a name that means `concept` (the synonym table), when
        they state exactly one (among the statements `keep` accepts)."""
        if self.meaning_of is None:
            return None
        return self.harvested_where(lambda s: (m := self.meaning_of(s.key, s.owner)) is not None
                                    and m.family == "setting" and m.concept == concept and keep(s))

    def harvested_where(self, keep: Callable[[Any], bool]) -> Value | None:
        """The value of the statements `keep` accepts, when they state exactly one."""
        found = [s for s in self.stated if keep(s)]
        values = {repr(s.value) for s in found}
        if len(values) != 1:
            return None
        best = max(found, key=lambda s: s.level)
        return Value(best.value, best.loc, best.level)

    def extra(self, key: str, value: Value | None) -> None:
        """A fact that is not a Settings key but shapes the MinT choices (world size, loss type...)."""
        if value is None or value.value is None:
            return
        old = self.extras.get(key)
        if old is None or value.level >= old.level:
            self.extras[key] = value

    def set_variant(self, name: str | None, loc: Loc | None, *, override: bool = True) -> None:
        """Name the algorithm's variant (gspo, dapo, rloo...), remembering where the inputs say so."""
        if name is None or (self.variant is not None and not override):
            return
        self.variant = name
        self.extras["variant"] = Value(name, loc) if loc is not None else self.extras.get("variant")

    def vote(self, algorithm: Algorithm, loc: Loc | None, why: str, weight: int = 1) -> None:
        self.votes.append(AlgorithmVote(algorithm, loc, why, weight))

    def algorithm(self) -> AlgorithmVote | None:
        if not self.votes:
            return None
        return max(self.votes, key=lambda v: v.weight)  # first of the strongest

    def warn(self, code: str, message: str, loc: Loc | None = None) -> None:
        source = str(loc) if loc else None
        if any(w.code == code and w.message == message for w in self.warnings):
            return
        self.warnings.append(PlanWarning(code=code, message=message, source=source))

    def construct(self, source: str, loc: Loc | None, mint: str, note: str | None = None) -> None:
        location = str(loc) if loc else None
        if any(c.source == source and c.location == location for c in self.constructs):
            return
        self.constructs.append(Construct(source=source, location=location, mint=mint, note=note))

    def tinker_fix(self, source: str, loc: Loc, fix: str, note: str | None = None) -> None:
        self.tinker_fixes.append(Construct(source=source, location=str(loc), mint=fix, note=note))

"""The rule registry: every lint rule's id, name, severity and documentation.

Each family module (sdk_rules, training_rules, setup_rules) registers its rules here with
`register(Rule(...))` and provides one libcst visitor that reports findings for them. The
documentation fields follow ruff's rule pages (what it finds, why it matters, the fix, an
example) and docs/rules.md is generated from them by `python -m mint_migrate.lint.docs`.
"""

from dataclasses import dataclass
from typing import Literal

from mint_migrate.errors import UnknownName

Severity = Literal["error", "warning"]
Family = Literal["pinned-sdk", "training", "setup"]

FAMILY_TITLES: dict[str, str] = {
    "pinned-sdk": "Pinned-SDK traps (tinker 0.22.0 under mindlab-toolkit 0.2.0)",
    "training": "Training traps",
    "setup": "Setup traps",
}


@dataclass(frozen=True)
class Rule:
    id: str
    name: str
    severity: Severity
    family: Family
    summary: str
    what: str
    why: str
    fix: str
    bad: str
    good: str
    autofix: str | None = None  # what `--fix` does, when the rule has a safe codemod


RULES: dict[str, Rule] = {}


def register(rule: Rule) -> Rule:
    if rule.id in RULES:
        raise ValueError(f"rule id {rule.id} registered twice")
    RULES[rule.id] = rule
    return rule


def get_rule(rule_id: str) -> Rule:
    try:
        return RULES[rule_id]
    except KeyError:
        raise UnknownName(
            f"Unknown lint rule {rule_id!r}; the rules are {', '.join(sorted(RULES))} (see docs/rules.md)."
        ) from None


def all_rules() -> list[Rule]:
    return [RULES[k] for k in sorted(RULES)]

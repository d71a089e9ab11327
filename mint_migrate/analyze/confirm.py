"""Settings the agent confirms: `key=value@file:line`, checked against the line it cites.

The analyzer cannot know every shape a real script takes; the agent reads the code anyway. It may
hand a setting the analysis missed (or read wrong) with a citation, and the tool applies it only
when the cited line of an input file really writes that value. The plan, the ledger and
MIGRATION.md mark such a setting `confirmed_by: agent`.
"""

import re
from dataclasses import dataclass

from mint_migrate.analyze.evidence import LORA_PARTS, Evidence, Level, Loc, Value
from mint_migrate.analyze.inputs import Project
from mint_migrate.analyze.scalars import parse_scalar
from mint_migrate.errors import MintMigrateError
from mint_migrate.plan import SETTING_KEYS

KEYS = tuple(k for k in SETTING_KEYS if k != "lora") + LORA_PARTS
_FORM = re.compile(r"(?P<key>[A-Za-z_][\w.]*)=(?P<value>.*)@(?P<file>[^@]+):(?P<line>\d+)\Z", re.S)
_NUMBER = re.compile(r"(?<![\w.])[-+]?(\d+\.\d*|\.\d+|\d+)([eE][-+]?\d+)?(?![\w.])")
_MAX = 64


@dataclass(frozen=True)
class Confirmed:
    key: str
    value: object
    file: str
    line: int
    written: str  # as given, for messages


def parse(text: str) -> Confirmed:
    m = _FORM.match(text.strip())
    if m is None:
        raise MintMigrateError(f"--set {text!r}: expected KEY=VALUE@FILE:LINE, e.g. "
                               "learning_rate=1e-5@train.py:12 (the line of an input file that writes the value)")
    key = m["key"]
    if key == "lora":
        key = "lora.rank"
    if key not in KEYS:
        raise MintMigrateError(f"--set {text!r}: {key} is not a setting mint-migrate plans; use one of "
                               f"{', '.join(KEYS)}")
    raw = m["value"].strip()
    if not raw:
        raise MintMigrateError(f"--set {text!r}: the value is empty")
    value = parse_scalar(raw)
    if key == "reward_functions" and isinstance(value, str):
        value = [v.strip() for v in value.split(",") if v.strip()]
    return Confirmed(key, value, m["file"].strip(), int(m["line"]), text.strip())


def parse_all(texts: list[str]) -> list[Confirmed]:
    if len(texts) > _MAX:
        raise MintMigrateError(f"--set was given {len(texts)} times; at most {_MAX} settings can be confirmed")
    return [parse(t) for t in texts]


def apply(items: list[Confirmed], project: Project, ev: Evidence) -> set[str]:
    """Check each citation against its line and offer the value above anything read; the keys applied."""
    applied = set()
    for item in items:
        f = _file(project, item)
        lines = f.text.splitlines()
        if not 1 <= item.line <= len(lines):
            raise MintMigrateError(f"--set {item.written}: {f.label} has {len(lines)} lines, not {item.line}; "
                                   "cite the line that writes the value")
        text = lines[item.line - 1]
        if not holds(text, item.value):
            raise MintMigrateError(f"--set {item.written}: {f.label}:{item.line} reads `{text.strip()[:200]}`, "
                                   f"which does not write {item.value!r}; cite the line where the value is written")
        ev.setting(item.key, Value(item.value, Loc(f.label, item.line), Level.CONFIRMED))
        applied.add(item.key)
    return applied


def _file(project: Project, item: Confirmed):
    found = project.find(item.file)
    if found is None:
        found = next((f for f in project.files if f.label == item.file), None)
    if found is None:
        names = ", ".join(f.label for f in project.files)
        raise MintMigrateError(f"--set {item.written}: {item.file} is not one of the inputs ({names}); cite a "
                               "line of a file given to migrate (pass it with --config if it is a companion)")
    return found


def holds(line: str, value: object) -> bool:
    """True when the line writes the value: a number in any spelling (`1e-5`, `0.00001`), a string
    as written (quoted or not), a bool in Python, YAML or shell spelling, a list item by item."""
    code = line.split("#", 1)[0] if "#" in line and not _in_string(line) else line
    if isinstance(value, bool):
        low = code.lower()
        words = ("true", "yes", "on", "1") if value else ("false", "no", "off", "0")
        return any(re.search(rf"(?<![\w]){w}(?![\w])", low) for w in words) or (value and "store_true" in low)
    if isinstance(value, int | float):
        return any(_equal(float(m.group(0)), float(value)) for m in _NUMBER.finditer(code))
    if isinstance(value, list):
        return bool(value) and all(holds(line, v) for v in value)
    if value is None:
        return bool(re.search(r"(?<![\w])(None|null|~)(?![\w])", code))
    return str(value) in line


def _equal(a: float, b: float) -> bool:
    return a == b or abs(a - b) <= 1e-12 * max(abs(a), abs(b))


def _in_string(line: str) -> bool:
    head = line.split("#", 1)[0]
    return head.count('"') % 2 == 1 or head.count("'") % 2 == 1

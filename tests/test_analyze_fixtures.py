"""Every migration fixture (tests/fixtures/migrate/<framework>/<case>/case.json) analyzes to its expected plan.

A case names its primary file, its companions, and the plan expected from them: framework,
algorithm, variant, every Settings key (value and file:line, or null), the MinT choices and the
warning codes. The fixtures are scripts written for this project in each framework's style.
"""

import json
import math
import re
from collections import Counter
from pathlib import Path

import pytest

from mint_migrate.analyze import analyze
from mint_migrate.frameworks import FRAMEWORK_NAMES
from mint_migrate.plan import SETTING_KEYS

FIXTURES = Path(__file__).parent / "fixtures" / "migrate"
CASES = sorted(FIXTURES.glob("*/*/case.json"))
FRAMEWORKS = FRAMEWORK_NAMES


def load_case(path: Path) -> tuple[Path, list[Path], dict]:
    case = json.loads(path.read_text())
    return path.parent / case["source"], [path.parent / c for c in case["configs"]], case["expected"]


def test_at_least_three_fixtures_per_framework():
    counts = Counter(p.parent.parent.name for p in CASES)
    assert all(counts[fw] >= 3 for fw in FRAMEWORKS), counts


def test_fixtures_cover_launch_scripts_yaml_and_python():
    kinds = Counter(load_case(p)[0].suffix for p in CASES)
    assert kinds[".sh"] >= 5 and kinds[".yaml"] >= 3 and kinds[".py"] >= 5


@pytest.mark.parametrize("case_path", CASES, ids=lambda p: f"{p.parent.parent.name}/{p.parent.name}")
def test_fixture_plan(case_path: Path):
    source, configs, expected = load_case(case_path)
    plan = analyze(source, configs)

    assert (plan.framework, plan.algorithm, plan.variant) == (
        expected["framework"],
        expected["algorithm"],
        expected["variant"],
    )
    got = {}
    for key in SETTING_KEYS:
        setting = getattr(plan.settings, key)
        got[key] = None if setting is None else json.loads(setting.model_dump_json(exclude_none=True))
    assert got == expected["settings"]
    for key, value in expected["mint"].items():
        assert getattr(plan.mint, key) == value, key
    assert sorted({w.code for w in plan.warnings}) == expected["warnings"]


def _numbers(text: str) -> list[float]:
    return [float(m) for m in re.findall(r"(?<![\w.])[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?", text)]


def line_holds(line: str, value) -> bool:
    """The cited line really holds the value: a number written in any spelling (5e-7, 5.0e-7),
    a string or every item of a list written out, a boolean as true/false."""
    if isinstance(value, bool):
        return str(value).lower() in line.lower()
    if isinstance(value, int | float):
        return any(math.isclose(n, value, rel_tol=1e-9) for n in _numbers(line))
    if isinstance(value, str):
        # a reward "file.py:fn" cites the line that names the file, or the def line
        return value in line or any(part in line for part in value.rsplit(":", 1) if part)
    if isinstance(value, list):
        return all(line_holds(line, item) for item in value)
    if isinstance(value, dict):  # lora: the rank (or the first part given) is on the cited line
        return any(line_holds(line, v) for v in value.values() if v is not None)
    return False


@pytest.mark.parametrize("case_path", CASES, ids=lambda p: f"{p.parent.parent.name}/{p.parent.name}")
def test_fixture_sources_cite_the_line_that_holds_the_value(case_path: Path):
    """Every reported source is `file:line` inside a file of the case, and that line contains the
    value (computed values, listed in the case's "computed", cite the line that computes them)."""
    source, configs, _ = load_case(case_path)
    computed = json.loads(case_path.read_text()).get("computed", [])
    plan = analyze(source, configs)
    for key in SETTING_KEYS:
        setting = getattr(plan.settings, key)
        if setting is None:
            continue
        path, line = setting.source.rsplit(":", 1)
        lines = (source.parent / path).read_text().splitlines()
        assert 1 <= int(line) <= len(lines), (key, setting.source)
        text = lines[int(line) - 1]
        value = setting.value.model_dump(exclude_none=True) if key == "lora" else setting.value
        if key in computed:
            assert text.strip(), (key, setting.source)
        else:
            assert line_holds(text, value), f"{key}={value!r} cites {setting.source}: {text.strip()!r}"


def test_framework_defaults_are_marked_and_never_read():
    source, configs, _ = load_case(FIXTURES / "trl" / "grpo_trl_cli" / "case.json")
    plan = analyze(source, configs)
    assert plan.settings.temperature is None
    assert plan.framework_defaults["temperature"].value == 1.0
    assert plan.framework_defaults["temperature"].source.startswith("trl default")
    assert all(getattr(plan.settings, key) is None for key in plan.framework_defaults)

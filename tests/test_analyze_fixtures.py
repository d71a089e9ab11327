"""Every migration fixture (tests/fixtures/migrate/<framework>/<case>/case.json) analyzes to its expected plan.

A case names its primary file, its companions, and the plan expected from them: framework,
algorithm, variant, every Settings key (value and file:line, or null), the MinT choices and the
warning codes. The fixtures are scripts written for this project in each framework's style.
"""

import json
from collections import Counter
from pathlib import Path

import pytest

from mcp_server.analyze import analyze
from mcp_server.plan import SETTING_KEYS

FIXTURES = Path(__file__).parent / "fixtures" / "migrate"
CASES = sorted(FIXTURES.glob("*/*/case.json"))
FRAMEWORKS = ("trl", "verl", "openrlhf", "torchforge", "tinker", "pytorch")


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


@pytest.mark.parametrize("case_path", CASES, ids=lambda p: f"{p.parent.parent.name}/{p.parent.name}")
def test_fixture_sources_point_at_real_lines(case_path: Path):
    """Every reported source is `file:line` inside a file that was given, on a non-empty line."""
    source, configs, _ = load_case(case_path)
    plan = analyze(source, configs)
    for key in SETTING_KEYS:
        setting = getattr(plan.settings, key)
        if setting is None:
            continue
        path, line = setting.source.rsplit(":", 1)
        lines = (source.parent / path).read_text().splitlines()
        assert 1 <= int(line) <= len(lines) and lines[int(line) - 1].strip(), (key, setting.source)


def test_framework_defaults_are_marked_and_never_read():
    source, configs, _ = load_case(FIXTURES / "trl" / "grpo_trl_cli" / "case.json")
    plan = analyze(source, configs)
    assert plan.settings.temperature is None
    assert plan.framework_defaults["temperature"].value == 1.0
    assert plan.framework_defaults["temperature"].source.startswith("trl default")
    assert all(getattr(plan.settings, key) is None for key in plan.framework_defaults)
